"""Time travel through LLDB's own commands: pt goto / pt reverse-* / pt find, and what bt, frame, source,
register and memory commands say at a past position, on loaded traces and on a live process.

Where each movement lands is the history engine's business (checked against GDB in
test_history_reference.py); here the positions come from the same engine through the Python API,
and the tests check that LLDB shows them: frames, lines, stop reasons, errors, the live process untouched.
"""

import json
import re

import pytest
from support.bundle_copies import without_values
from support.paths import HISTORY, TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.launching import launchable  # noqa: E402
from support.lldb22 import needs_lldb_22, run_lldb_22  # noqa: E402
from support.lldb_output import frames, position_after  # noqa: E402
from support.trace_scripts import scenarios  # noqa: E402

from lldb_trace import api  # noqa: E402
from lldb_trace.history import HistoryError  # noqa: E402
from lldb_trace.values.machine_state import GENERAL  # noqa: E402

LONGJMP = HISTORY / "longjmp"


@pytest.fixture(scope="module")
def longjmp(tmp_path_factory):
    """The longjmp recording without its values: the frames LLDB shows are the trace's calls, as they are for a
    hardware trace without a core (test_values_lldb.py has the values)."""
    return without_values(LONGJMP, tmp_path_factory.mktemp("pc-only"))


def loaded(session, bundle):
    path = bundle if bundle.suffix == ".json" else bundle / "trace.json"
    session.ok(f"trace load {path}")
    return api.open_bundle(path).threads[0]


def test_goto_shows_the_past_through_lldbs_own_commands(session, longjmp):
    thread = loaded(session, longjmp)
    output = session.ok("pt goto 100")
    assert "stop reason = history: instruction 100 of 162" in output
    assert "__pthread_cleanup_upto + 6" in output and position_after(output) == 100
    # longjmp's caller chain, each outer frame at its call site, main marked as the oldest traced frame
    assert [name for name, _ in frames(session)] == [
        "__pthread_cleanup_upto", "__libc_siglongjmp",
        "level6", "level5", "level4", "level3", "level2", "level1", "main",
    ]  # fmt: skip
    assert frames(session)[3] == ("level5", "longjmp.c:18")
    assert "frame #8 is the oldest traced frame" in session.ok("bt")
    assert len(thread.stack_at(100)) == 9
    assert "__pthread_cleanup_upto + 6" in session.ok("thread list")
    selected = session.ok("frame select 3")
    assert "level5" in selected and "-> 18" in selected and "level6(depth + 1);" in selected
    assert "level5" in session.ok("frame info")
    assert re.search(r"0x40164e <\+19>:\s+callq", session.ok("disassemble -p -c 1"))
    session.ok("frame select 0")
    assert "__pthread_cleanup_upto + 6" in session.ok("image lookup -a $pc")
    assert "position: instruction 100 of 162" in session.ok("pt dump")


def test_after_a_longjmp_the_jumped_over_frames_are_gone(session, longjmp):
    loaded(session, longjmp)
    session.ok("pt goto 147")  # the first instruction back in main after longjmp
    assert frames(session) == [("main", "longjmp.c:42")]
    session.ok("pt goto 155")  # in after(), called once main is back
    assert [name for name, _ in frames(session)] == ["after", "main"]
    session.ok("pt goto end")
    assert [name for name, _ in frames(session)] == ["the_end", "main"]


def test_without_a_core_the_past_shows_what_the_instructions_alone_determine(session, longjmp):
    """The longjmp bundle has no known state (no core): the pc, and what constants in the code give."""
    thread = loaded(session, longjmp)
    session.ok("pt goto 80")  # in level6
    frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
    shown = {register.GetName(): register.GetValueAsUnsigned() for register in frame.GetRegisters()[0]}
    proven = {name: value for name, value in thread.registers_at(80).items() if value is not None}
    assert shown == proven and shown["rip"] == 0x40161D and "rsp" not in shown
    session.handle("register read rsp")
    assert "error: rsp is not known at this position" in session.streams()[1]
    session.handle("register read --all")  # the sets with no register known are not listed as empty headings
    out = session.streams()[0]
    every = out[out.rindex("General Purpose Registers:") :]
    assert "Floating Point Registers:" not in every and "rip = 0x000000000040161d" in every
    assert every.rstrip().endswith("fs_base, gs_base, the floating point registers")
    session.handle("register read foo rbx")  # no register at all: LLDB's own error, not "not known"
    assert "error: Invalid register name 'foo'" in session.streams()[1]
    assert "error: foo is not known" not in session.streams()[1]
    session.handle("register read")  # every register of LLDB's general set that it leaves out is named
    unknown = "not known at this position: rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp, r8, r9, r10, r11, r12, r13, r14"
    assert f"{unknown}, r15, rflags, cs, ss, ds, es, fs, gs, fs_base, gs_base" in session.streams()[0]
    assert not session.handle("memory read -c 8 0x7fffffffe000").Succeeded()
    # a local whose place LLDB cannot find (no frame base: the trace has no registers but the pc) is not known
    session.ok("frame variable depth")
    assert "(int) depth = <not known at this position>" in session.streams()[0]
    code = session.ok("memory read -s 1 -c 4 -f x 0x40161d")
    assert code.split(":")[1].split() == ["0x48", "0x89", "0xe5", "0x48"]  # mov %rsp, %rbp; then a REX prefix
    session.ok("frame select 1")
    outer = session.handle("register read")
    _out, err = session.streams()
    assert "frame #1 has no registers in a trace" in outer.GetError() + err


def test_a_flags_register_not_known_is_named_so_where_every_general_register_is(session):
    """At gradebook's position 268 every general register is known from its end core but rflags is not: it was
    left out of 'register read' and 'register read rflags' said "Invalid register name"."""
    thread = loaded(session, HISTORY / "gradebook")
    known = thread.registers_at(268)
    assert known["rflags"] is None and None not in [known[name] for name in GENERAL]
    session.ok("pt goto 268")
    session.handle("register read")
    assert "not known at this position: rflags, cs, ss, ds, es, fs, gs\n" in session.streams()[0]
    session.handle("register read rflags rsp")
    out, err = session.streams()
    assert "error: rflags is not known at this position" in err and f"rsp = 0x{known['rsp']:016x}" in out


def expected_outcome(history, method, reverse=False):
    """What the engine says a movement does from the current position: its position, or its error."""
    try:
        moved = getattr(history, method)(reverse)
    except HistoryError as error:
        return str(error)
    return None if moved.position == history.end else moved.position


def test_reverse_and_forward_movements_land_where_the_history_engine_says(session, longjmp):
    history = loaded(session, longjmp).history
    history.goto(100)
    session.ok("pt goto 100")
    for command, method, reverse in [
        ("pt reverse-finish", "finish", True), ("pt reverse-step", "step", True), ("pt reverse-next", "next", True),
        ("pt reverse-stepi", "stepi", True), ("pt reverse-nexti", "nexti", True), ("pt reverse-finish", "finish", True),
        ("pt stepi", "stepi", False), ("pt nexti", "nexti", False), ("pt step", "step", False),
        ("pt next", "next", False), ("pt step", "step", False), ("pt finish", "finish", False),
        ("pt next", "next", False), ("pt finish", "finish", False),
    ]:  # fmt: skip
        expected = expected_outcome(history, method, reverse)
        result = session.handle(command)
        if isinstance(expected, str):
            assert expected in result.GetError(), command
        else:
            assert position_after(result.GetOutput()) == expected, command


def test_lldbs_stepping_commands_move_forwards_through_history(session, longjmp):
    history = loaded(session, longjmp).history
    session.ok("pt goto 40")
    history.goto(40)
    for command, method in [("thread step-in", "step"), ("n", "next"), ("si", "stepi"), ("ni", "nexti"),
                            ("thread step-out", "finish"), ("s", "step"), ("finish", "finish")]:  # fmt: skip
        expected = expected_outcome(history, method)
        session.handle(command)
        out, err = session.streams()
        if isinstance(expected, str):
            assert err.rstrip().endswith(expected), command
        else:
            assert position_after(out) == expected, command
    session.ok("pt goto 40")
    history.goto(40)
    for _ in range(3):
        expected = expected_outcome(history, "stepi")
    session.handle("thread step-inst -c 3")
    assert position_after(session.streams()[0]) == expected


def test_breakpoints_stop_continue_both_ways(session, longjmp):
    loaded(session, longjmp)
    session.ok("breakpoint set -n level3")
    session.ok("breakpoint set -f longjmp.c -l 38")  # in after()
    disabled = session.ok("breakpoint set -a 0x4016e7")  # main after the longjmp: disabled, never stops
    number = re.search(r"Breakpoint (\d+)", disabled).group(1)
    session.ok(f"breakpoint disable {number}")
    output = session.ok("pt reverse-continue")
    assert "breakpoint 2.1" in output and "after" in output
    back = position_after(output)
    session.ok("process continue --reverse")  # LLDB's own command, overridden: it prints on the debugger's stream
    output = session.streams()[0]
    assert "breakpoint 1.1" in output and "level3" in output and position_after(output) < back
    output = session.ok("pt reverse-continue")
    assert "No more reverse-execution history." in output and position_after(output) == 0
    output = session.ok("pt continue")
    assert "breakpoint 1.1" in output
    session.ok("c")
    out, _err = session.streams()
    assert position_after(out) == back


def test_both_ends_of_history(session, longjmp):
    loaded(session, longjmp)
    output = session.ok("pt goto begin")
    assert position_after(output) == 0 and frames(session) == [("main", "longjmp.c:41")]
    for command in ("pt reverse-stepi", "pt reverse-step", "pt reverse-next", "pt reverse-continue"):
        output = session.ok(command)
        assert "No more reverse-execution history." in output and position_after(output) == 0, command
    assert "not meaningful in the outermost frame" in session.handle("pt reverse-finish").GetError()
    session.ok("pt goto end")
    output = session.ok("pt stepi")
    assert "No more reverse-execution history." in output and position_after(output) is None


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("pt goto foo", "unknown position 'foo'"),
        ("pt goto -163", "position -163 is before the beginning: thread"),
        ("pt goto -0", "unknown position '-0'"),
        ("pt goto 99999999999999999999", "out of range"),
        ("pt goto 163", "has positions 0 to 162"),
        ("pt goto", "give one position"),
        ("pt goto 1 2", "give one position"),
        ("pt reverse-step 3", "doesn't take any arguments"),
        ("thread step-over -m this-thread", "takes no options"),
    ],
)
def test_bad_positions_are_one_line_errors_and_nothing_moves(session, command, message, longjmp):
    loaded(session, longjmp)
    session.ok("pt goto 100")
    result = session.handle(command)
    _out, err = session.streams()
    error = result.GetError() + err
    assert not result.Succeeded() or "error:" in err
    assert message in error and error.strip().count("\n") == 0, error
    assert "position: instruction 100 of 162" in session.ok("pt dump")


def test_negative_positions_count_from_the_end(session, longjmp):
    loaded(session, longjmp)
    assert position_after(session.ok("pt goto -1")) == 161
    assert position_after(session.ok("pt goto -162")) == 0


def test_a_gap_is_no_place_to_stand(session):
    session.ok(f"trace load {TRACES / 'overflow' / 'trace.json'}")
    error = session.handle("pt goto 1508").GetError()
    assert "item 1508 is a gap in the trace (overflow" in error and "go to 1507 or 1509" in error
    assert "position: end of history" in session.ok("pt dump")
    session.ok("pt goto 1509")
    output = session.ok("pt reverse-stepi")
    assert "crossed a gap in the trace (overflow" in output and position_after(output) == 1507


def test_a_thread_without_a_trace_and_a_target_without_one(session, tmp_path):
    document = json.loads((TRACES / "static" / "trace.json").read_text())
    for key in ("processes",):
        for thread in document[key][0]["threads"]:
            thread["iptTrace"] = str(TRACES / "static" / thread["iptTrace"])
        for module in document[key][0]["modules"]:
            module["file"] = str(TRACES / "static" / module["file"])
    document["processes"][0]["threads"].append({"tid": 99999})
    (tmp_path / "trace.json").write_text(json.dumps(document))
    session.ok(f"trace load {tmp_path / 'trace.json'}")
    session.ok("thread select 2")
    assert "thread 99999 has no trace of its own" in session.handle("pt goto 1").GetError()
    session.ok(f"target create {LONGJMP / 'modules' / 'tmp' / 'lldb-trace-history' / 'longjmp' / 'longjmp'}")
    assert "not traced" in session.handle("pt goto 1").GetError()
    assert "not traced" in session.handle("pt find -f main").GetError()


def test_find_lists_executions_newest_first(session):
    thread = loaded(session, HISTORY / "recursion")
    expected = thread.find(function="fact")
    listed = json.loads(session.ok("pt find --function fact -c 0 --json"))
    assert [(match["index"], match["depth"]) for match in listed] == [(m.index, m.depth) for m in expected]
    assert [match["index"] for match in listed] == sorted((match["index"] for match in listed), reverse=True)
    assert {match["function"] for match in listed} == {"recursion`fact"} and len(listed) == 8
    text = session.ok("pt find -f fact -c 2")
    assert "newest first" in text and "... and more" in text and f"{expected[0].index}      {expected[0].depth}" in text
    by_line = json.loads(session.ok("pt find --line recursion.c:13 -c 0 --json"))
    assert [match["index"] for match in by_line] == [m.index for m in thread.find(line=("recursion.c", 13))]
    by_address = json.loads(session.ok(f"pt find --address {hex(thread.item(by_line[0]['index']).address)} --json"))
    assert by_address[0]["index"] == by_line[0]["index"]
    by_function = json.loads(session.ok("pt find --address fact -c 0 --json"))  # an expression: fact's entry
    assert [match["index"] for match in by_function] == [match["index"] for match in listed]
    output = session.ok(f"pt goto {listed[-1]['index']}")
    assert "fact" in output and position_after(output) == listed[-1]["index"]
    for command, message in [
        ("pt find -f nosuch", "no function named 'nosuch'"),
        ("pt find -l recursion.c", "give FILE:LINE"),
        ("pt find -l nosuch.c:3", "no code for nosuch.c:3"),
        ("pt find", "give exactly one of"),
        ("pt find -f fact -a 0x10", "give exactly one of"),
        ("pt find -a zz", "'zz' is no address: use of undeclared identifier 'zz'"),
        ("pt find -f fact -s 4", "--size goes with --write or --read"),
        ("pt find -w 0x1000 -s 0", "--size 0: give a number of bytes from 1 to 1048576"),
        ("pt find -f fact -t 5", "thread 5 is not traced"),
        ("pt find -f fact -c -1", "--count must be 0 or more"),
    ]:
        assert message in session.handle(command).GetError(), command


def test_find_a_function_skips_copies_of_it_inlined_elsewhere(session):
    """ld.so's debug info has malloc inlined into dozens of its functions; none of those is a call of malloc."""
    basic = TRACES / "basic"
    if not scenarios.modules_match(basic / "trace.json"):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    thread = loaded(session, basic)
    listed = json.loads(session.ok("pt find --function malloc -c 0 --json"))
    assert {match["function"] for match in listed} == {"libc.so.6`__libc_malloc"}
    assert [match["index"] for match in listed] == [m.index for m in thread.find(function="malloc")]


def recorded_to_the_end(session, tmp_path, monkeypatch):
    """recursion.c launched, recorded by the software recorder from main to the_end: the live target."""
    binary = launchable(tmp_path, monkeypatch, "recursion.c", "-O0")
    session.launch(binary, "-n main")
    session.ok("pt start --backend software")
    session.ok("breakpoint set -n the_end")
    session.ok("continue")
    return session.target


def test_live_replay_never_touches_the_process(session, tmp_path, monkeypatch):
    live = recorded_to_the_end(session, tmp_path, monkeypatch)
    present = session.ok("register read rsp rip")
    output = session.ok("pt reverse-finish")
    assert "stop reason = history" in output and "recursion.c:26" in output
    view = session.target
    assert view.GetProcess().GetPluginName() == "ScriptedProcess" and session.debugger.GetNumTargets() == 2
    past = session.ok("register read rsp")  # the stopped process is the end state the past is recovered from
    assert "rsp = 0x" in past and past != present
    session.ok("pt reverse-step")
    assert frames(session)[0][0] == "fib"
    output = session.ok("pt goto end")
    assert "breakpoint" in output and session.debugger.GetNumTargets() == 1 and session.target == live
    assert session.ok("register read rsp rip") == present
    session.ok("continue")
    assert live.GetProcess().GetState() == lldb.eStateExited


def test_a_live_history_view_unwinds_the_stack_as_a_loaded_trace_does(session, tmp_path, monkeypatch):
    """The view's process read memory in LLDB's 512-byte cache lines: a line whose first bytes were known and the
    next not hid the known return addresses after them, so ``bt`` showed frame 0 alone and no variable had a
    frame base; a saved bundle of the same session showed them all.  The live process keeps its cache."""
    binary = launchable(tmp_path, monkeypatch, "crash.c", "-O0")
    session.launch(binary, "-n main")
    session.ok("pt start --backend software")
    session.handle("continue")  # to the null dereference in descend(0)
    live = session.target
    session.ok("pt goto -8")  # in descend(1), before it calls descend(0)
    assert [name for name, _ in frames(session)][:6] == ["descend"] * 5 + ["main"]
    assert "n = 1" in session.ok("frame variable n")
    assert "= true" in session.ok("settings show target.process.disable-memory-cache")  # the view reads exactly
    session.ok("pt goto end")
    assert session.target == live and "= false" in session.ok("settings show target.process.disable-memory-cache")
    live.GetProcess().Kill()


def test_process_kill_refuses_a_recording_and_kills_the_live_process_a_view_shows(session, tmp_path, monkeypatch):
    """LLDB's own kill of a trace's ScriptedProcess stopped its state thread and left it 'stopped': the next
    movement waited forever for a stop.  In a live history view LLDB killed nothing (the view's process)."""
    loaded(session, HISTORY / "gradebook")
    session.ok("pt goto 100")
    session.handle("process kill")
    refused = "error: a loaded trace's process is a recording and cannot be killed: 'target delete' closes it"
    assert refused in session.streams()[1]
    assert "instruction 50 of 274" in session.ok("pt goto 50")  # and no hang
    session.ok("target delete")
    live = recorded_to_the_end(session, tmp_path, monkeypatch)
    session.ok("pt goto 10")
    assert session.target != live  # the history view
    session.handle("kill")
    assert session.debugger.GetNumTargets() == 1 and session.target == live
    assert live.GetProcess().GetState() == lldb.eStateExited
    assert "has exited" in session.handle("pt goto 5").GetError()


@needs_lldb_22
def test_a_live_history_view_unwinds_the_stack_in_lldb_22(tmp_path, monkeypatch):
    binary = launchable(tmp_path, monkeypatch, "crash.c", "-O0")
    commands = [f"file {binary}", "b main", "run", "pt start --backend software", "continue", "pt goto -8", "bt"]
    result = run_lldb_22(tmp_path, [*commands, "frame variable n"])
    assert "frame #5: " in result.stdout and "crash`main at crash.c:14" in result.stdout
    assert "(int) n = 1" in result.stdout


@needs_lldb_22
def test_time_travel_in_debians_lldb_22(tmp_path, longjmp):
    commands = [f"trace load {longjmp}", "pt goto 100", "bt", "frame select 3", "pt reverse-finish",
                "breakpoint set -n level3", "process continue --reverse", "pt find -f level3"]  # fmt: skip
    run = run_lldb_22(tmp_path, commands)
    out = run.stdout
    assert run.returncode == 0, run.stderr + out
    assert "frame #8: 0x00000000004016f5 longjmp`main at longjmp.c:44:5" in out
    assert "level5(depth=<unavailable>) at longjmp.c:18:3" in out
    assert "history: breakpoint 1.1, instruction 59 of 162" in out
    assert "Executions of level3" in out and re.search(r"\n\s+55\s+3\s+longjmp`level3", out)


def test_a_breakpoint_on_the_way_stops_a_step(session, longjmp):
    loaded(session, longjmp)
    session.ok("pt goto 37")  # main's line 44: level1(1), whose calls reach level3
    session.ok("breakpoint set -n level3")
    output = session.ok("pt next")
    assert "history: breakpoint 1.1, instruction 59 of 162" in output and position_after(output) == 59
    session.ok("pt goto 37")
    session.ok("thread step-inst-over -c 30")  # nexti over the call: the breakpoint inside ends the count early
    assert position_after(session.streams()[0]) == 59
