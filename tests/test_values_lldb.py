"""Values in LLDB: a recording with cores is as good as ``target create --core`` at its end, shows exactly what
the recovery proves at past positions, and finds the faulty write of the README's gradebook with
``pt find --write`` and a watchpoint.

The gradebook (test_traces/src/gradebook.c) writes a fifth mark past ``marks[]`` onto the ``course`` pointer
beside it, and crashes three calls later following that pointer.  Recorded with ``lldb-trace record``, which
writes a core where recording starts and where it ends (the crash).
"""

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.paths import HISTORY, SOURCES

from lldb_trace import api
from lldb_trace.trace_files import load_trace
from lldb_trace.values.core_file import open_core
from lldb_trace.values.core_match import with_checked_cores
from lldb_trace.values.machine_state import TRACKED

lldb = pytest.importorskip("lldb")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradebook")
    binary = folder / "gradebook"
    subprocess.run(["gcc", "-O0", "-g", "-static", "-no-pie", "-o", str(binary), str(SOURCES / "gradebook.c")],
                   check=True)  # fmt: skip
    out = folder / "rec"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(out), "--", str(binary)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "crashed" in result.stderr + result.stdout, result.stderr
    return binary, out


def _core_target(debugger, binary, core):
    target = debugger.CreateTarget(str(binary))
    process = target.LoadCore(str(core))
    assert process.IsValid()
    return target


def _frames(thread):
    return [thread.GetFrameAtIndex(k) for k in range(thread.GetNumFrames())]


def _variables(frame):
    return [str(value) for value in frame.GetVariables(True, True, False, True)]


def test_the_end_of_history_is_the_core_as_lldb_shows_a_core(session, recorded):
    binary, out = recorded
    session.ok(f"trace load {out}/trace.json")
    traced = session.target.GetProcess().GetSelectedThread()
    core = _core_target(session.debugger, binary, out / "cores/end.core").GetProcess().GetSelectedThread()
    assert [f.GetPC() for f in _frames(traced)] == [f.GetPC() for f in _frames(core)]
    assert len(_frames(core)) >= 4  # credits_earned, report, main and libc's start
    for ours, theirs in zip(_frames(traced), _frames(core), strict=True):
        assert _variables(ours) == _variables(theirs)
    ours, theirs = traced.GetFrameAtIndex(0), core.GetFrameAtIndex(0)
    for group in theirs.GetRegisters():
        names = [r.GetName() for r in group if not r.GetName().startswith(("ymm", "mm", "fi", "fo", "fdp", "fip"))]
        for name in names:
            mine = ours.FindRegister(name)
            if group.GetName().startswith("General") or name in ("fctrl", "fstat", "mxcsr") or "xmm" in name:
                assert mine.IsValid(), name
                assert mine.GetData().uint8s == theirs.FindRegister(name).GetData().uint8s, name
    error = lldb.SBError()
    rsp = theirs.FindRegister("rsp").GetValueAsUnsigned()
    read = session.target.GetProcess().ReadMemory(rsp, 256, error)
    assert error.Success() and read == core.GetProcess().ReadMemory(rsp, 256, lldb.SBError())
    assert "SIGSEGV" in traced.GetStopDescription(200) and "fault address=0xe" in traced.GetStopDescription(200)
    value = traced.GetFrameAtIndex(0).EvaluateExpression("*student")
    assert value.GetChildMemberWithName("count").GetValueAsUnsigned() == 5
    assert value.GetChildMemberWithName("course").GetValueAsUnsigned() == 6  # the fifth mark


def _known_registers(frame):
    return {r.GetName(): r.GetValueAsUnsigned() for group in frame.GetRegisters() for r in group}


def test_past_positions_show_exactly_what_the_recovery_proves(session, recorded):
    _, out = recorded
    session.ok(f"trace load {out}/trace.json")
    thread = api.open_bundle(out / "trace.json").threads[0]
    for position in range(0, thread.item_count, 23):
        session.ok(f"pt goto {position}")
        frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
        shown = _known_registers(frame)
        proven = {name: value for name, value in thread.registers_at(position).items() if value is not None}
        assert {name: shown[name] for name in proven} == proven
        assert not {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"} & (shown.keys() - proven.keys())
        if "rsp" in proven:
            data, mask = thread.read_memory_at(position, proven["rsp"], 64)
            error = lldb.SBError()
            read = session.target.GetProcess().ReadMemory(proven["rsp"], 64, error)
            known = mask.find(b"\x00")
            if known == 0:
                assert not error.Success()
            else:
                assert read[: len(data) if known < 0 else known] == data[: len(data) if known < 0 else known]


def test_the_values_that_lead_to_the_bug(session, recorded):
    """In the third add_mark call, before it writes: two marks, count 2, the course intact."""
    _, out = recorded
    session.ok(f"trace load {out}/trace.json")
    calls = api.open_bundle(out / "trace.json").threads[0].find(function="add_mark")
    third = sorted(match.index for match in calls)[2]
    session.ok(f"pt goto {third}")
    session.ok("pt next")  # past the prologue: the argument is stored
    student = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).FindVariable("student")
    ada = student.Dereference()
    assert ada.GetChildMemberWithName("count").GetValueAsUnsigned() == 2
    marks = ada.GetChildMemberWithName("marks")
    assert [marks.GetChildAtIndex(k).GetValueAsUnsigned() for k in range(2)] == [7, 9]


def test_the_faulty_write_is_found_by_pt_find_write_and_a_watchpoint(session, recorded):
    _, out = recorded
    session.ok(f"trace load {out}/trace.json")
    session.ok("frame select 2")
    address = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(2).FindVariable("ada")
    course = address.GetChildMemberWithName("course").GetLoadAddress()
    found = session.ok("pt find --write &ada.course --size 8")
    rows = re.findall(r"^\s*(\d+)\s+write (\d+) bytes at (0x[0-9a-f]+): (\S+) -> (\S+)$", found, re.M)
    assert rows, found
    index, size, at, old, new = rows[0]  # the newest: the fifth mark, over course's low half
    assert (int(size), int(at, 16), int(new, 16)) == (4, course, 6)
    initialised = [row for row in rows if int(row[1]) == 8 and int(row[2], 16) == course]
    assert initialised and initialised[0][4] != "?"  # main's `ada = {..., &algebra, 0}`
    assert int(old, 16) == int(initialised[0][4], 16) & 0xFFFFFFFF  # the write replaced the pointer's low half
    thread = api.open_bundle(out / "trace.json").threads[0]
    assert thread.find(write=course, size=8)[0].position == int(index)
    session.ok("watchpoint set variable ada.course")
    listed = session.streams()[0]
    assert "Watchpoint created: Watchpoint 1: addr = " in listed
    assert "\n    watchpoint spec = 'ada.course'\n" in listed  # as LLDB says it (no "(expression)" of ours)
    session.handle("watchpoint modify -c 'ada.count == 5' 1")  # LLDB said "no watchpoints exist to be modified"
    assert "error: a trace's watchpoints take no condition, ignore count or commands" in session.streams()[1]
    report = session.ok("pt reverse-continue")
    assert "Watchpoint 1 hit:" in report and "new value: 0x0000000000000006" in report
    frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
    assert frame.GetFunctionName() == "add_mark" and frame.GetLineEntry().GetLine() == 24  # after the store
    assert f"instruction {int(index) + 1} of" in report
    report = session.ok("pt reverse-continue")  # the initialisation, at main's start
    assert "Watchpoint 1 hit:" in report
    assert session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetFunctionName() == "main"
    session.ok("watchpoint disable 1")
    report = session.ok("pt continue")
    assert "Watchpoint" not in report
    session.ok("watchpoint delete 1")
    session.ok("watchpoint list")
    assert "No watchpoints currently set." in session.streams()[0]


@needs_lldb_22
def test_lldb_22_shows_the_core_and_past_values(tmp_path, recorded):
    binary, out = recorded
    shown = run_lldb_22(tmp_path, [f"trace load {out}/trace.json", "bt", "frame select 2", "frame variable",
                                   "register read rsp rip", "pt reverse-step", "frame variable",
                                   "register read rsp", "watchpoint set variable student->course",
                                   "pt reverse-continue"])  # fmt: skip
    core = subprocess.run(["lldb-22", "-x", "-b", "-o", f"target create {binary} --core {out}/cores/end.core",
                           "-o", "bt", "-o", "frame select 2", "-o", "frame variable", "-o", "register read rsp rip"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    ours = shown.stdout

    def frames(text):
        return re.findall(r"frame #\d+: (0x[0-9a-f]+)", text.split("(lldb) bt")[1].split("(lldb) ")[0])

    assert frames(ours) == frames(core.stdout) and len(frames(ours)) >= 4
    assert "course = 0x0000000000000006" in ours and "count = 5" in ours
    assert re.search(r"rsp = 0x[0-9a-f]+", ours).group() == re.search(r"rsp = 0x[0-9a-f]+", core.stdout).group()
    assert "(int) mark = 8" in ours  # at the instruction before, the local already holds the average
    assert "Watchpoint 1 hit:" in ours and "error:" not in shown.stderr


def test_a_trace_that_does_not_say_how_it_stopped_takes_the_cores_signal(recorded):
    """A perf.data from perf itself carries no stop reason: the core's signal and fault address are the stop."""
    _, out = recorded
    bundle = load_trace(out / "trace.json")
    process = bundle.processes[0]
    silent = replace(process, threads=tuple(replace(t, stop=None) for t in process.threads))
    checked = with_checked_cores(replace(bundle, processes=(silent,)))
    stop = checked.processes[0].threads[0].stop
    assert stop.signal == 11 and stop.description.endswith("(fault address=0xe)")
    assert stop.pc == open_core(out / "cores/end.core").threads[0].registers["rip"]


def test_a_live_process_is_the_end_state_of_its_history_view(session, tmp_path, monkeypatch):
    """pt start keeps the state where recording started; the stopped process is where the trace ends: in the
    history view the locals are the program's own values (fact(5) = 120, fact(3) = 6, fib(5) = 5)."""
    from support.launching import launchable

    binary = launchable(tmp_path, monkeypatch, "recursion.c", "-O0")
    session.launch(binary, "-n main")
    session.ok("pt start --backend software")
    session.ok("breakpoint set -n the_end")
    session.ok("continue")
    session.ok("pt reverse-finish")  # main, after the three results are stored
    variables = session.ok("frame variable")
    assert "(int) big = 120" in variables and "(int) small = 6" in variables and "(int) tree = 5" in variables
    session.ok("pt reverse-step")  # fib(5)'s closing line
    assert session.ok("frame variable n").strip() == "(int) n = 5"
    session.ok("pt goto end")
    session.ok(f"trace save {tmp_path / 'saved'}")
    saved = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]
    assert saved["startCoreFile"] == "cores/start.core" and saved["coreFile"].startswith("cores/")
    start = open_core(tmp_path / "saved" / saved["startCoreFile"]).threads[0].registers["rip"]
    assert api.open_bundle(tmp_path / "saved" / "trace.json").threads[0].item(0).address == start


def test_the_live_software_recorder_keeps_the_registers_at_each_stop(session, tmp_path, monkeypatch):
    """Stepping with `next`, pt start --backend software stops before every instruction of main's lines: the
    registers LLDB read there are saved (registerStates) and shown at those positions of the saved trace."""
    from support.launching import launchable

    binary = launchable(tmp_path, monkeypatch, "recursion.c", "-O0")
    session.launch(binary, "-n main")
    session.ok("pt start --backend software")
    for _ in range(3):
        session.ok("next")
    frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
    live = {name: frame.FindRegister(name).GetValueAsUnsigned() for name in ("rax", "rsp", "rdi", "rflags")}
    session.ok(f"trace save {tmp_path / 'saved'}")
    (thread,) = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]["threads"]
    with np.load(tmp_path / "saved" / thread["registerStates"]) as states:
        counts, rows = states["instruction"], states["registers"]
    assert len(counts) >= 10  # main's three lines, one state before each instruction, calls run out
    saved = api.open_bundle(tmp_path / "saved" / "trace.json").threads[0]
    assert rows[-1][TRACKED.index("rsp")] == live["rsp"]
    for count, row in zip(counts, rows, strict=True):
        shown = saved.registers_at(int(count))  # no gap: a position is an instruction count
        assert [shown[name] for name in TRACKED] == [int(value) for value in row]
    end = saved.registers_at(saved.item_count)
    assert {name: end[name] for name in live} == live


def test_stepping_over_a_call_stops_at_a_watched_write_inside_it(session):
    """As GDB's watchpoints do: `pt reverse-next` over add_mark(&ada, 6) stops right after its store to course."""
    session.ok(f"trace load {HISTORY / 'gradebook' / 'trace.json'}")
    session.ok("watchpoint set expression -s 8 -- &student->course")
    session.ok("pt goto 182")  # main's loop, after the fifth add_mark returned
    report = session.ok("pt reverse-next")
    assert "Watchpoint 1 hit:" in report and "instruction 174 of 274" in report
    assert session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetFunctionName() == "add_mark"
    assert "Watchpoint" not in session.ok("pt reverse-next")  # nothing watched between: line 23
    assert "instruction 174 of 274" in session.ok("pt next")  # forwards, onto the store again


def test_a_live_processs_watchpoints_stop_its_history_and_the_views_are_its_own(session, tmp_path, monkeypatch):
    """One set of watchpoints, LLDB's own on the live process: one set live stops ``pt reverse-continue`` right after
    the write (it went past, to the breakpoint before), and one set in the history view is the live process's
    (it vanished with the view at the end of history)."""
    from support.launching import launchable

    binary = launchable(tmp_path, monkeypatch, "gradebook.c", "-O0")
    session.launch(binary, "-n add_mark")
    session.ok("pt start --backend software")
    for _ in range(4):
        session.handle("continue")  # add_mark's fifth call: student->count is 4
    live = session.target
    session.ok("watchpoint set expression -s 4 -- &student->count")
    report = session.ok("pt reverse-continue")
    assert "Watchpoint 1 hit:" in report and "old value: 0x00000003" in report and "new value: 0x00000004" in report
    assert "stop reason = history: watchpoint 1, " in report and "gradebook.c:25" in report
    session.ok("watchpoint delete 1")  # in the view: the live process's
    assert live.GetNumWatchpoints() == 0
    session.ok("pt reverse-stepi")
    session.ok("watchpoint set variable student->course")  # resolved in the past frame, watched live
    assert live.GetNumWatchpoints() == 1 and live.GetWatchpointAtIndex(0).GetWatchSize() == 8
    session.ok("watchpoint list")
    assert "Current watchpoints:\nWatchpoint 2: addr = 0x" in session.streams()[0]  # printed as LLDB prints it
    session.ok("pt goto end")
    assert session.target == live and live.GetNumWatchpoints() == 1
    live.GetProcess().Kill()


def test_a_known_state_the_recovery_refuses_is_said_once_not_hidden(tmp_path):
    """A start state of another moment (the end core named as startCoreFile) is refused when values are first
    asked for: LLDB said only "not known" for every register; it now says why, once."""
    copy = tmp_path / "gradebook"
    subprocess.run(["cp", "-r", str(HISTORY / "gradebook"), str(copy)], check=True)
    bundle = json.loads((copy / "trace.json").read_text())
    bundle["processes"][0]["startCoreFile"] = bundle["processes"][0]["coreFile"]
    (copy / "trace.json").write_text(json.dumps(bundle))
    binary = Path(sys.executable).parent / "lldb"
    run = subprocess.run(
        [str(binary), "--no-lldbinit", "--batch", "-o", "command script import lldb_trace",
         "-o", f"trace load {copy / 'trace.json'}", "-o", "pt goto 150", "-o", "register read rsp",
         "-o", "register read rbp"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = run.stdout + run.stderr
    assert said.count("warning: values at past positions are not shown: ") == 1, said
    assert "is not where the trace of thread" in said and "error: rsp is not known at this position" in said


def test_a_global_whose_bytes_are_unknown_can_be_watched(session, tmp_path, monkeypatch):
    """global_other_thread.c's global is written by a thread ``pt start`` does not trace, so at the traced thread's
    past positions its bytes are not known: LLDB gives no address for a value it cannot read, and ``watchpoint set
    variable shared_global`` said "no variable" (``&shared_global`` failed to materialize).  Both take the
    address from its symbol now."""
    from support.launching import launchable

    binary = launchable(tmp_path, monkeypatch, "global_other_thread.c", "-O0", "-pthread")
    session.launch(binary, "-n marker")
    session.ok("pt start --backend software")
    session.ok("breakpoint delete --force")
    session.ok("breakpoint set -n done")
    session.handle("continue")
    live = session.target
    session.ok("breakpoint delete --force")
    session.ok("breakpoint set -n probe")
    session.ok("pt reverse-continue")
    target = session.target
    address = target.FindSymbols("shared_global")[0].GetSymbol().GetStartAddress().GetLoadAddress(target)
    session.ok("watchpoint set variable shared_global")
    session.ok("watchpoint set expression -s 4 -- &shared_global")
    errors = session.streams()[1]
    assert "error" not in errors, errors
    assert [watchpoint.GetWatchAddress() for watchpoint in live.watchpoint_iter()] == [address]  # LLDB's own, live
    live.GetProcess().Kill()
