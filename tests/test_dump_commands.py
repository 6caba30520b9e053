"""trace dump --instructions / --function-calls in a real LLDB, checked against ground truth,
pyelftools' symbols and (where installed) native lldb-22's own decoder."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.committed_bundles import loadable  # noqa: E402
from support.lldb_output import listed  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.elf_info import ElfInfo  # noqa: E402


def truth(folder, tid):
    return list(GroundTruth.read(folder / "ground_truth" / f"{tid}.txt").addresses)


def load(session, name):
    folder = TRACES / name
    loadable(folder)
    session.ok(f"pt load {folder / 'trace.json'}")
    return folder, session.target.GetProcess().GetSelectedThread().GetThreadID()


@pytest.mark.parametrize("name", ["basic", "crash", "threads", "static", "percpu"])
def test_last_instructions_are_the_last_executed_ones(session, name):
    folder, tid = load(session, name)
    expected = truth(folder, tid)
    shown = listed(session.ok("pt dump --instructions -c 20"))
    assert [address for _, address in shown] == expected[-20:][::-1]
    assert [index for index, _ in shown] == list(range(len(expected) - 1, len(expected) - 21, -1))


def test_offset_forwards_id_and_all(session):
    folder, tid = load(session, "static")
    expected = truth(folder, tid)
    shown = listed(session.ok("pt dump -i -c 5 -o 7"))
    assert [a for _, a in shown] == expected[-12:-7][::-1]
    shown = listed(session.ok("pt dump -i -c 4 --forwards -o 3"))
    assert shown == list(enumerate(expected))[3:7]
    shown = listed(session.ok("pt dump -i -c 3 --id 100"))
    assert shown == [(100, expected[100]), (99, expected[99]), (98, expected[98])]
    everything = listed(session.ok("pt dump -i --all --forwards"))
    assert everything == list(enumerate(expected))


def test_enter_continues_where_the_dump_stopped(session):
    folder, tid = load(session, "static")
    expected = truth(folder, tid)
    interpreter = session.debugger.GetCommandInterpreter()
    first = lldb.SBCommandReturnObject()
    interpreter.HandleCommand("pt dump --instructions -c 4", first, True)
    again = lldb.SBCommandReturnObject()
    interpreter.HandleCommand("", again, True)  # what pressing Enter sends
    assert [a for _, a in listed(first.GetOutput() + again.GetOutput())] == expected[-8:][::-1]
    assert listed(again.GetOutput())[0][0] == len(expected) - 5
    # the routed native command continues too (LLDB adds its --continue, which routing passes on)
    interpreter.HandleCommand("thread trace dump instructions -c 3", lldb.SBCommandReturnObject(), True)
    interpreter.HandleCommand("", lldb.SBCommandReturnObject(), True)
    out, _ = session.streams()
    assert [a for _, a in listed(out)] == expected[-3:][::-1] + expected[-6:-3][::-1]


def test_symbols_sources_and_disassembly_agree_with_the_binary(session):
    _folder, _tid = load(session, "crash")
    text = session.ok("pt dump -i -c 6")
    assert "  crash`descend" in text.splitlines()
    assert "; at crash.c:" in text
    for index, address in listed(text):
        lldb_disassembly = session.ok(f"disassemble -s {address} -c 1").splitlines()[-1]
        line = next(line for line in text.splitlines() if line.startswith(f"  [{index}] "))
        assert line.split(" : ", 1)[1].split()[0] == lldb_disassembly.split(">:")[1].split()[0], line


def test_intel_flavor_is_honoured(session):
    load(session, "static")
    att = session.ok("pt dump -i -c 20 --forwards")
    session.ok("settings set target.x86-disassembly-flavor intel")
    intel = session.ok("pt dump -i -c 20 --forwards")
    assert "%" in att and "%" not in intel
    assert "movq   %rsp, %rbp" in att or "movq" in att
    assert re.search(r": mov\s+rbp, rsp", intel)


def test_json_items(session):
    folder, tid = load(session, "crash")
    expected = truth(folder, tid)
    items = json.loads(session.ok("pt dump -i -c 3 --json"))
    assert [int(item["loadAddress"], 16) for item in items] == expected[-3:][::-1]
    assert items[0]["id"] == len(expected) - 1
    assert {"id", "loadAddress", "module", "symbol", "mnemonic", "source", "line"} <= set(items[0])
    assert items[0]["module"] == "crash" and items[0]["symbol"] == "descend"


def test_gaps_are_items_with_libipt_errors(session):
    folder, tid = load(session, "missing-module")
    decoded = json.loads(session.ok("pt dump -i --all --forwards --json"))
    gaps = [item for item in decoded if "error" in item]
    assert gaps and all(item["error"] == "no memory mapped at this address" for item in gaps)
    text = session.ok("pt dump -i --all")
    assert "error -13. 'no memory mapped at this address'" in text
    # between the gaps, each run of instructions is a stretch of the real execution
    expected = truth(folder, tid)
    run = [int(item["loadAddress"], 16) for item in decoded[: decoded.index(gaps[0])]]
    assert run == expected[: len(run)]


def test_events_and_time(session):
    load(session, "timestamps")
    text = session.ok("pt dump -i --all --events --time --forwards")
    assert "(event) enabled at 0x" in text and "(event) disabled" in text
    stamps = [int(m) for m in re.findall(r"^  \[\d+: (\d+) ns\]", text, re.M)]
    assert stamps and stamps == sorted(stamps)


def test_function_calls_match_the_elf_symbols(session):
    folder, _tid = load(session, "crash")
    text = session.ok("pt dump --function-calls --all")
    rows = [line for line in text.splitlines()[1:] if line.strip()]
    program = ElfInfo(folder / "modules" / "crash").symbols
    descend_rows = [row for row in rows if "crash`descend" in row]
    assert descend_rows and all(row.rstrip().endswith(f"0x{program['descend']:x}") for row in descend_rows)
    depths = [len(row.split("]", 1)[1]) - len(row.split("]", 1)[1].lstrip()) for row in descend_rows]
    assert depths == sorted(depths)  # oldest (outermost) first: the recursion goes deeper down the page
    assert "crash`main" in rows[0]  # the trace starts in main: the first call of the tree
    puts = next(row for row in rows if "libc.so.6`" in row and "via crash`symbol stub for: puts" in row)
    assert puts.rstrip().endswith("bound lazily)")  # named by libc's puts, reached through the stub
    flat = session.ok("pt dump -C --flat --all")
    assert len([line for line in flat.splitlines() if "crash`descend" in line]) == len(descend_rows)
    calls = json.loads(session.ok("pt dump -C --all --json"))
    assert calls[0]["symbol"] == "main" and calls[-1]["symbol"] == "descend"
    assert calls[-1]["depth"] > calls[0]["depth"] == 0
    assert [call["firstId"] for call in calls] == sorted(call["firstId"] for call in calls)  # execution order


def test_a_call_the_trace_ends_at_is_named_by_where_the_thread_stands(session):
    """recursion's trace ends with main's call of the_end, where the thread stands (frame #0): no instruction of
    the_end ran, so the call is named by that address, not "(no instruction)"."""
    folder = TRACES / "history" / "recursion"
    session.ok(f"pt load {folder / 'trace.json'}")
    entry = ElfInfo(folder / "modules/tmp/lldb-trace-history/recursion/recursion").symbols["the_end"]
    last = session.ok("pt dump --function-calls -c 1").splitlines()[-1]
    assert last.split() == ["[347]", "recursion`the_end", "(the", "trace", "ends", "at", "its", "entry)", f"{entry:#x}"]
    (call,) = json.loads(session.ok("pt dump --function-calls -c 1 --json"))
    assert (call["symbol"], call["loadAddress"]) == ("the_end", f"{entry:#x}")
    assert (call["firstId"], call["lastId"]) == (347, 346)
    assert session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetPC() == entry


def test_call_forest_ranges_cover_the_trace(session):
    import lldb_trace.api as api

    load(session, "basic")
    trace = api.of_target(session.target)
    thread = trace.threads[0]
    forest = thread.call_forest()
    assert [tree.first for tree in forest.trees] == [0]
    assert forest.trees[0].last == thread.item_count - 1
    for call in forest.calls():
        assert all(call.first <= child.first <= child.last <= call.last for child in call.children)
        assert all(child.depth == call.depth + 1 for child in call.children)
    assert [call.first for call in forest.calls()] == sorted(call.first for call in forest.calls())


def test_bad_options_are_one_line_errors(session, tmp_path):
    load(session, "static")
    assert "choose one of" in session.handle("pt dump -i -C").GetError()
    assert "--count must be 0 or more" in session.handle("pt dump -i -c -3").GetError()
    assert "has no traced thread 77" in session.handle("pt dump -i -t 77").GetError()
    out = tmp_path / "dump.txt"
    session.ok(f"pt dump -i -c 2 --file {out}")
    assert len(listed(out.read_text())) == 2
    assert "cannot write" in session.handle(f"pt dump -i --file {tmp_path}/no/such/dir/x").GetError()


def test_routed_thread_trace_dump_commands(session):
    folder, tid = load(session, "threads")
    session.ok("thread trace dump instructions -c 3 -s 1")
    session.ok("thread trace dump function-calls")
    out, err = session.streams()
    expected = truth(folder, tid)
    assert [a for _, a in listed(out)][:3] == expected[-4:-1][::-1]
    assert "libc.so.6`_exit" in out and not err


def test_same_instructions_as_native_lldb_22(tmp_path):
    """lldb-22's own intel-pt decoder (no plugin) lists the same last instructions."""
    binary = shutil.which("lldb-22")
    if binary is None:
        pytest.skip("Debian's lldb-22 is not installed")
    folder = TRACES / "basic"
    loadable(folder)
    native = subprocess.run(
        [binary, "-x", "-b", "-o", f"trace load {folder / 'trace.json'}",
         "-o", "thread trace dump instructions -c 60 -j"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    start = native.stdout.index("[")
    items = json.JSONDecoder().raw_decode(native.stdout[start:])[0]
    native_addresses = [int(item["loadAddress"], 16) for item in items if "loadAddress" in item]
    session = Session(tmp_path)
    try:
        session.ok(f"pt load {folder / 'trace.json'}")
        ours = json.loads(session.ok(f"pt dump -i -c {len(native_addresses)} --json"))
    finally:
        session.close()
    assert [int(item["loadAddress"], 16) for item in ours] == native_addresses
    assert Path(folder).exists()


def test_session_info_of_a_per_cpu_bundle_counts_calls(session):
    load(session, "percpu")
    info = json.loads(session.ok("pt dump --json"))["threads"][0]
    assert info["perCpu"]["cpus"] == [0, 1] and info["perCpu"]["bytes"] > 0
    calls = info["decoded"]["functionCalls"]
    tree = session.ok(f"pt dump --function-calls --flat --json -c {calls + 1}")
    assert calls == len(json.loads(tree)) > 0
