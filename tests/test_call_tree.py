"""The call tree of a real program that calls three shared libraries through their PLT stubs.

Calls are named by the library function that ran (followed through the stub
and, on a first call, through ld.so's lazy binding), counted against GDB's
breakpoint hits, printed in execution order as native lldb-22 prints them,
filtered by module and function, and windowed like the instruction dump.
"""

import collections
import json
import re
import shutil
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from support.libcalls_recording import expected_calls

import lldb_trace.api as api
from lldb_trace.decode import DecodedThread, process_image
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.parallel import decode_pieces
from lldb_trace.decode.plt import PltSections
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace


@pytest.fixture(scope="module")
def thread(libcalls):
    return api.open_bundle(libcalls[0]).threads[0]


@pytest.fixture
def session(session, libcalls):
    """conftest's in-process LLDB with the recorded libcalls program loaded."""
    session.ok(f"pt load {libcalls[0]}")
    return session


def traced_calls(thread):
    """The calls the trace saw being made (not the tree roots it started in or returned into)."""
    roots = {tree.first for tree in thread.call_forest().trees}
    return [call for call in thread.call_forest().calls() if call.first not in roots]


def main_of(thread):
    return next(call for call in thread.call_forest().calls() if thread.locate(call.address).function == "main")


def test_library_calls_are_named_by_the_function_that_ran(libcalls, thread):
    expected = expected_calls(libcalls[2])
    children = main_of(thread).children
    assert len(children) == len(expected)
    for number, (call, (module, function, stub_module, called)) in enumerate(zip(children, expected, strict=True)):
        ran, stub = thread.locate(call.address), thread.locate(call.stub)
        assert fnmatchcase(ran.module, module) and fnmatchcase(ran.function, function), (number, ran)
        assert not ran.stub  # the function itself, not a stub
        assert fnmatchcase(stub.module, stub_module) and (stub.function, stub.stub) == (called, True)  # via its stub
        assert call.tail_call == (stub_module != "libcalls")  # zlib's own stubs are reached by tail calls
        assert call.lazy_binding == (number < len(expected) // 3)  # only the first round binds lazily
    # no call anywhere is left named by a stub its trace went through
    assert not [call for call in traced_calls(thread) if thread.locate(call.address).stub]


def test_a_lazily_bound_call_holds_ld_so_s_fixup_as_a_callee(thread):
    calls = main_of(thread).children
    first, later = calls[0], calls[len(calls) // 3]  # strlen in the first and in the second round
    assert later.address == first.address
    assert thread.locate(first.children[0].address).module.startswith("ld-linux")  # _dl_fixup, called by the resolver
    assert not any(thread.locate(c.address).module.startswith("ld-linux") for c in later.children)


_GDB_SCRIPT = """set pagination off
set confirm off
break *main
run
python
import json
addresses = json.load(open("{inputs}"))
names = {{a: gdb.execute(f"info symbol {{a}}", to_string=True).strip() for a in addresses}}
points = {{a: gdb.Breakpoint(f"*{{a}}") for a in addresses}}
for point in points.values():
    point.ignore_count = 1 << 30
gdb.execute("continue")
json.dump({{"names": names, "hits": {{a: p.hit_count for a, p in points.items()}}}}, open("{outputs}", "w"))
end
"""


@pytest.mark.skipif(shutil.which("gdb") is None, reason="GDB is not installed")
def test_per_function_and_module_counts_match_gdb(libcalls, thread, tmp_path):
    """GDB, run from main to the exit, names each function the tree says was called and counts its entries."""
    counted = collections.Counter(call.address for call in traced_calls(thread))
    (tmp_path / "in.json").write_text(json.dumps(sorted(counted)))
    script = _GDB_SCRIPT.format(inputs=tmp_path / "in.json", outputs=tmp_path / "out.json")
    (tmp_path / "count.gdb").write_text(script)
    subprocess.run(["gdb", "-nx", "-batch", "-x", str(tmp_path / "count.gdb"), str(libcalls[1])],
                   capture_output=True, timeout=300, check=True)  # fmt: skip
    gdb = json.loads((tmp_path / "out.json").read_text())
    assert {int(a): hits for a, hits in gdb["hits"].items()} == dict(counted)
    per_module = collections.Counter()
    for address, said in gdb["names"].items():
        ours = thread.locate(int(address))
        if said.startswith("No symbol"):  # a stripped library's local function: neither has a name for it
            assert ours.function is None or ours.function.startswith("___lldb_unnamed_symbol"), said
            continue
        name, module = re.fullmatch(r"(\S+) in section \S+ of (\S+)", said).groups()
        assert not name.endswith("@plt")  # a function, not the stub it was called through
        assert Path(module).resolve().name == ours.module  # GDB names the same module
        per_module[ours.module] += counted[int(address)]
    assert per_module["libm.so.6"] >= 6 and per_module["libc.so.6"] >= 12  # cos, exp; strlen, malloc, memcpy, free


def test_the_untraced_caller_is_named_by_where_main_returned(thread):
    [tree] = thread.call_forest().trees
    assert tree.untraced_start and tree.children[0] == main_of(thread)  # then exit
    returned_to = thread.item(main_of(thread).last + 1)
    assert tree.address == returned_to.address
    assert thread.locate(tree.address).module == "libc.so.6"
    assert thread.locate(tree.address).function != "main"


def rows(text):
    """``[(index, depth, label, address, note)]`` of a --function-calls text dump."""
    lines = [line for line in text.splitlines() if line.startswith("  [")]
    label_column = 2 + max(line.index("]") + 1 - 2 for line in lines) + 2
    found = []
    for line in lines:
        label, address, note = re.match(r"(.*?)  +(0x[0-9a-f]+|-)(.*)", line[label_column:]).groups()
        depth = (len(label) - len(label.lstrip())) // 2
        found.append((int(line[3 : line.index("]")]), depth, label.strip(), address, note.strip()))
    return found


def test_calls_print_in_execution_order_and_newest_first_on_request(session, thread):
    shown = rows(session.ok("pt dump --function-calls --all"))
    calls = thread.call_forest().calls()
    assert [row[0] for row in shown] == [call.entered for call in calls]  # the function's first instruction
    assert [row[1] for row in shown] == [call.depth for call in calls]  # parents above their children
    assert shown[0][2] == thread.locate(calls[0].address).function_label + " (untraced start)"
    assert shown[1][2] == "libcalls`main"
    assert rows(session.ok("pt dump --function-calls --all --newest-first")) == shown[::-1]
    strlen = next(row for row in shown if row[4] == "(via libcalls`symbol stub for: strlen, bound lazily)")
    assert strlen[2].startswith("libc.so.6`") and "strlen" in strlen[2]


def test_module_and_function_filters_are_globs(session, thread):
    libm = json.loads(session.ok("pt dump -C --all --json --module libm.so*"))
    in_libm = [call for call in thread.call_forest().calls() if thread.locate(call.address).module == "libm.so.6"]
    assert [shown["id"] for shown in libm] == [call.entered for call in in_libm] and len(libm) >= 6
    assert [shown["firstId"] for shown in libm] == [call.first for call in in_libm]
    strings = json.loads(session.ok("pt dump -C --all --json --function str*"))
    assert {shown["symbol"] for shown in strings} >= {"strcmp"}
    via_strlen = [shown for shown in strings if shown["stub"] and shown["stub"]["symbol"] == "symbol stub for: strlen"]
    assert len(via_strlen) == 3 and all(shown["module"] == "libc.so.6" for shown in via_strlen)
    assert "(no calls)" in session.ok("pt dump -C --module no-such-module")


def ids(session, command):
    return [shown["id"] for shown in json.loads(session.ok(command + " --json"))]


def test_count_offset_forwards_id_and_enter(session, thread):
    every = [call.entered for call in thread.call_forest().calls()]
    firsts = [call.first for call in thread.call_forest().calls()]
    assert ids(session, "pt dump -C --all") == every
    assert ids(session, "pt dump -C -c 3") == every[-3:]
    assert ids(session, "pt dump -C -c 3 -o 2") == every[-5:-2]
    assert ids(session, "pt dump -C -c 3 --forwards -o 2") == every[2:5]
    k = 20
    inside = firsts[k] + 1  # an item of call k before its first callee (if any) starts
    assert firsts[k + 1] > inside
    assert ids(session, f"pt dump -C -c 2 --id {inside}") == every[k - 1 : k + 1]
    assert ids(session, f"pt dump -C -c 2 --id {inside} --forwards") == every[k : k + 2]
    assert "past the end" in session.handle(f"pt dump -C --id {thread.item_count}").GetError()
    # Enter continues towards the older calls, or the newer ones going forwards
    import lldb

    interpreter = session.debugger.GetCommandInterpreter()
    for command, expected in (
        ("pt dump -C -c 3 --json", every[-6:-3]),
        ("pt dump -C -c 3 --forwards --json", every[3:6]),
    ):
        interpreter.HandleCommand(command, lldb.SBCommandReturnObject(), True)
        again = lldb.SBCommandReturnObject()
        interpreter.HandleCommand("", again, True)  # what pressing Enter sends
        assert [shown["id"] for shown in json.loads(again.GetOutput())] == expected


@pytest.mark.skipif(shutil.which("lldb-22") is None, reason="Debian's lldb-22 is not installed")
def test_same_order_as_native_lldb_22(libcalls, session, tmp_path):
    """Native lldb-22 prints calls oldest first too: ours are a subsequence of its (it also counts jumps)."""
    bundle = libcalls[0]
    native = subprocess.run(
        ["lldb-22", "-x", "-b", "-o", f"trace load {bundle}",
         "-o", f"thread trace dump instructions -f -a -j -F {tmp_path / 'items.json'}",
         "-o", f"thread trace dump function-calls -j -F {tmp_path / 'calls.json'}"],
        capture_output=True, text=True, timeout=300, env={"LLDB_TRACE_NO_ROUTING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert native.returncode == 0, native.stderr
    address = {int(i["id"]): int(i["loadAddress"], 16) for i in json.loads((tmp_path / "items.json").read_text())
               if "loadAddress" in i}  # fmt: skip

    def called(call):  # native's calls in execution order: the untraced callers' own callees come first
        prefix = call.get("untracedPrefixSegment")
        if prefix:
            yield from called(prefix["nestedCall"])
        for segment in call.get("tracedSegments", []):
            if "nestedCall" in segment:
                nested = segment["nestedCall"]
                yield address[int(nested["tracedSegments"][0]["firstInstructionId"])]
                yield from called(nested)

    theirs = [a for tree in json.loads((tmp_path / "calls.json").read_text()) for a in called(tree)]
    dumped = json.loads(session.ok("pt dump -C --all --json"))
    ours = [int((shown["stub"] or shown)["loadAddress"], 16) for shown in dumped if shown["id"] > 0]
    shared = [a for a in ours if a in set(theirs)]  # native misses calls between unsymbolized functions
    assert len(shared) >= 0.9 * len(ours)
    remaining = iter(theirs)
    assert all(a in remaining for a in shared)


def test_the_forest_is_the_same_when_decoded_in_pieces(libcalls):
    """Calls that cross the pieces of a parallel decode are found, named and followed through stubs alike."""
    bundle = load_trace(libcalls[0])
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process, workers=1)
    tid = trace.tids[0]
    pieces = decode_pieces(trace.trace_bytes(tid), trace.cpu, process_image(process), trace.expander, 8)
    pieced = DecodedThread(pieces)
    assert len(pieced.parts) > 1 and pieced.item_count == trace.decoded(tid).item_count

    def described(forest):
        return [(c.first, c.last, c.depth, c.address, c.stub, c.lazy_binding, c.untraced_start) for c in forest.calls()]

    whole = described(trace.call_forest(tid))
    assert described(CallForest(pieced, trace.expander, trace.functions, PltSections(process.modules))) == whole
    assert sum(stub is not None for *_, stub, _lazy, _untraced in whole) >= 16
