"""The Python API: readable reprs, items that say what they are (from LLDB inside it, from the ELF and
DWARF outside it, with the same answers), and one-line errors for a target without a trace."""

import json
import subprocess
import sys

import numpy as np
import pytest
from support.paths import SOURCES, TRACES
from support.trace_scripts import scenarios

import lldb_trace.api as api
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.errors import LldbTraceError

CRASH = TRACES / "crash" / "trace.json"


@pytest.fixture
def crash():
    if not scenarios.modules_match(CRASH):
        pytest.skip("the crash scenario was recorded against system libraries that differ here")
    return api.open_bundle(CRASH)


def test_reprs_are_short_and_say_what_they_are(crash):
    assert repr(crash) == f"<Trace {CRASH} (intel-pt-lldb): process 5707 (threads 5707)>"
    thread = crash.thread(5707)
    assert repr(thread) == "<ThreadTrace tid 5707 of process 5707: not decoded yet>"
    count = thread.item_count
    assert repr(thread) == f"<ThreadTrace tid 5707 of process 5707: {count} items, {count} instructions, 0 errors>"
    root = thread.call_forest().trees[0]
    assert repr(root) == f"<Call [0..{count - 1}] depth 0 at 0x401154, 2 callees>"  # not its whole subtree
    puts = root.children[0]
    assert repr(puts).endswith("via stub 0x401030 (bound lazily), 3 callees>")
    assert repr(thread.item(0)) == "<Item 0 0x401154 crash`main at crash.c:12: pushq %rbp>"


def test_items_describe_themselves_without_lldb(crash):
    thread = crash.thread(5707)
    item = thread.item(0)
    assert (item.function, item.symbol, item.module) == ("crash`main", "main", "crash")
    assert item.file.endswith("/crash.c") and (item.line, item.source) == (12, "crash.c:12")
    assert item.disassembly == "pushq %rbp"
    stub = next(item for item in thread.items(limit=20) if item.address == 0x401030)
    assert (stub.function, stub.symbol, stub.location.stub) == ("crash`symbol stub for: puts", "puts", True)
    assert thread.locate(0x401154) == item.location
    intel = api.open_bundle(CRASH, disassembly_flavor="intel").thread(5707).item(0)
    assert intel.disassembly == "push rbp"


def executed(bundle_path):
    """Every distinct address the bundle's (single) thread ran, from its ground truth."""
    [truth] = (bundle_path.parent / "ground_truth").glob("*.txt")
    return sorted(set(GroundTruth.read(truth).addresses))


def test_the_elf_symbolizer_answers_as_lldb_does(session, libcalls):
    """Module, function (or stub), file, line and disassembly of every executed address, on -g programs."""
    from lldb_trace.debugger.symbolizer import LldbSymbolizer

    bundles = [libcalls[0]] + ([CRASH] if scenarios.modules_match(CRASH) else [])
    for bundle in bundles:
        session.ok(f"pt load {bundle}")
        process_trace = api.of_target(session.target).processes[0]
        from_lldb = LldbSymbolizer(session.target, process_trace.module_bytes)
        from_elf = api.open_bundle(bundle).threads[0].symbolizer
        addresses = executed(bundle)
        differing = [hex(a) for a in addresses if from_elf.locate(a) != from_lldb.locate(a)]
        assert not differing, (bundle, differing[:5], from_elf.locate(int(differing[0], 16)))
        modules = {from_lldb.locate(a).module for a in addresses}
        assert {"libc.so.6", "libm.so.6"} <= modules or bundle == CRASH
        assert any(from_lldb.locate(a).stub for a in addresses)  # PLT stubs were among them


def test_of_target_says_what_is_missing(session):
    with pytest.raises(LldbTraceError, match="of_target needs an LLDB target, not NoneType"):
        api.of_target(None)
    import lldb

    with pytest.raises(LldbTraceError, match="no target is selected: load a trace first with 'trace load BUNDLE'"):
        api.of_target(lldb.SBTarget())
    session.ok(f"target create {sys.executable}")
    with pytest.raises(
        LldbTraceError, match=r"has no trace: load one with 'trace load BUNDLE', or trace .* 'pt start'"
    ):
        api.of_target(session.target)


def test_of_target_items_come_from_lldb(session, crash):
    session.ok(f"pt load {CRASH}")
    thread = api.of_target(session.target).thread(5707)
    assert thread.item(0).function == "crash`main" and thread.item(0).source == "crash.c:12"
    assert repr(thread.item(0)) == repr(crash.thread(5707).item(0))


def test_a_thread_that_ended_before_the_core_says_why_it_has_no_values(tmp_path):
    """threads.c's workers end before the program does: the core where the trace ends does not hold them, and
    without the recorder's registers nothing does.  The error says so, rather than asking for the core the bundle
    has."""
    binary = tmp_path / "threads"
    subprocess.run(["gcc", "-O0", "-g", "-pthread", "-o", str(binary), str(SOURCES / "threads.c")], check=True)
    out = tmp_path / "rec"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--threads", "all", "-o", str(out), "--", str(binary)]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    document = json.loads((out / "trace.json").read_text())
    for thread in document["processes"][0]["threads"]:
        thread.pop("registerStates")
    (out / "trace.json").write_text(json.dumps(document))
    threads = {thread.tid: thread for thread in api.open_bundle(out / "trace.json").threads}
    main, workers = threads.pop(document["processes"][0]["pid"]), list(threads.values())
    assert main.values().registers_at(main.item_count)["rsp"] is not None  # in the core
    with pytest.raises(LldbTraceError, match=r"is not in .*end\.core \(it ended before the core was taken\)"):
        workers[0].values()


def test_positions_count_back_from_the_end_and_bad_arguments_say_what_to_give():
    """As 'pt goto -1' reads it: -1 is the last item; a wrong type, size or mix of queries is a one-line error
    (registers_at('x') said "position x is out of range", read_memory_at(i, a, -4) answered nothing, a line as
    'FILE:LINE' was an internal TypeError, and find(function=..., write=...) ignored the function)."""
    from support.paths import HISTORY

    thread = api.open_bundle(HISTORY / "gradebook").threads[0]
    last = thread.item_count - 1
    assert thread.goto(-1) == last and thread.registers_at(-1) == thread.registers_at(last)
    assert thread.read_memory_at(-1, 0x7FFFFFFFEB80, 8) == thread.read_memory_at(last, 0x7FFFFFFFEB80, 8)
    assert thread.read_memory_at(np.int64(last), np.uint64(0x7FFFFFFFEB80), 8) == thread.read_memory_at(
        last, 0x7FFFFFFFEB80, 8
    )  # numpy integers are integers (they were refused)
    assert [m.index for m in thread.find(line="gradebook.c:23")] == [
        m.index for m in thread.find(line=("gradebook.c", 23))
    ]
    for call, message in [
        (lambda: thread.registers_at("x"), "a position is an item index (an int), not 'x'"),
        (lambda: thread.goto(-10_000), "position -10000 is before the beginning"),
        (lambda: thread.read_memory_at(5, 0x7FFFFFFFEB80, -4), "size -4: give a number of bytes from 1 to"),
        (lambda: thread.find(function="add_mark", write=0x10), "find takes write= or read= alone"),
        (lambda: thread.find(line="gradebook"), "give (FILE, LINE) or 'FILE:LINE'"),
        # an address below 0, past 64 bits or not an int answered "unknown"; a limit below 1 cut the list's tail
        (lambda: thread.read_memory_at(5, -1, 4), "an address is a 64-bit unsigned int, not -1"),
        (lambda: thread.read_memory_at(5, 1.5, 4), "an address is a 64-bit unsigned int, not 1.5"),
        (lambda: thread.read_memory_at(5, 2**64 - 2, 4), "4 bytes at 0xfffffffffffffffe run past the end"),
        (lambda: thread.find(write=0x7FFFFFFFEB80, limit=-1), "limit -1: give how many accesses to list"),
        (lambda: thread.find(write=0x7FFFFFFFEB80, limit="a"), "limit 'a': give how many accesses to list"),
        (lambda: api.open_bundle(HISTORY / "gradebook", core=5), "5 is not a path: give the path of the core file"),
    ]:
        with pytest.raises(LldbTraceError, match=message.replace("(", r"\(").replace(")", r"\)")):
            call()
