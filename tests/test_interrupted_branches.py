"""A signal delivered just after an indirect branch (a ret, a ``jmp *``) looks like the branch going to the handler.
Where the handler returns later in the trace, its ret to the rt_sigreturn trampoline tells the two apart
(tests/test_value_recovery.py); where it never returns (a crash in the handler, a history that ends in one), only
the trace can: Intel PT shows tracing stopped asynchronously where the thread stood (FUP, TIP.PGD) and resumed at
the handler (``ThreadValues.interrupted``).  Without that mark the registers the kernel set for the handler were
taken from before it, and shown wrong, hundreds of them."""

import signal
import subprocess
import sys

import pytest
from support.paths import SOURCES
from support.stepped_truth import build_program, register_score, step_program

from lldb_trace import api
from lldb_trace.values.process_values import interruptions
from lldb_trace.values.recovery import ThreadValues
from lldb_trace.x86.instructions import Transfer

STEPS = 6000


@pytest.fixture(scope="module")
def handler_program(tmp_path_factory):
    """signal_handler.c, and its plain run's positions after an indirect branch once the handler is installed."""
    binary = tmp_path_factory.mktemp("interrupted") / "program"
    build_program(SOURCES / "signal_handler.c", ["-O0", "-Wl,-z,now"], binary)
    plain = step_program(binary, STEPS, until="the_end")
    values = ThreadValues(plain.addresses, plain.read_code)
    installed = next(p for p, a in enumerate(plain.addresses) if values._effect(a).kind == "syscall")  # sigaction
    after = {
        values._effect(plain.addresses[p - 1]).kind: p
        for p in reversed(range(installed + 1, len(plain.addresses)))
        if values._flow[plain.addresses[p - 1]].transfer == Transfer.INDIRECT
    }  # the first of each kind: a ret back into signal's caller, raise@plt's jmp *GOT
    return binary, plain, after


@pytest.mark.parametrize("branch", ["ret", "jmp"])
def test_a_signal_after_an_indirect_branch_into_a_handler_that_never_returns(handler_program, branch):
    """The signal comes just before the instruction after the branch runs, and the history ends in the handler
    (``note``): marked as a trace marks it, the jump is a delivery the end state proves, and no value is wrong."""
    binary, plain, after = handler_program
    position = after[branch]
    truth = step_program(binary, STEPS, until="note", signal_at=(position, signal.SIGUSR1))
    assert truth.addresses[:position] == plain.addresses[:position] != truth.addresses[: position + 1]
    stood = plain.addresses[position]  # where the signal found the thread: the instruction it had not run yet
    values = ThreadValues(truth.addresses, truth.read_code, end=truth.end, end_after_last=True,
                          interrupted={position - 1: stood})  # fmt: skip
    share, wrong = register_score(values, truth)
    assert wrong == [] and values.conflicts == 0
    assert values._signals.proven == {position - 1: stood}
    assert values.registers_at(position - 1)["rsp"] == truth.registers[position - 1]["rsp"]  # before: the frame's
    assert share > 0.5


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """fault_after_return.c recorded by ``lldb-trace record``: its trace, core and register states."""
    folder = tmp_path_factory.mktemp("fault_after_return")
    binary = folder / "program"
    build_program(SOURCES / "fault_after_return.c", ["-O0"], binary)
    out = folder / "rec"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(out), "--", str(binary)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert "killed by SIGABRT" in result.stdout + result.stderr
    return out / "trace.json"


def test_the_trace_marks_where_the_fault_stopped_the_thread(recorded):
    """bounce's ret went back to a store through a null pointer, which faulted: the PT stream says tracing stopped
    there (not run) and resumed in on_fault."""
    thread = api.open_bundle(recorded).threads[0]
    seen = thread.values()
    ((position, stood),) = seen.interrupted.items()
    assert seen._effect(seen.addresses[position]).kind == "ret"
    store = seen._effect(stood)
    assert store.mnemonic == "mov" and [(kind, ref.base, ref.disp) for kind, ref, _ in store.accesses] == [
        ("w", None, 0)
    ]
    assert seen.addresses[position + 1] != stood  # the handler's first instruction
    assert interruptions(thread.decoded, 0) == seen.interrupted


def test_the_recovery_from_the_end_core_alone_shows_no_wrong_value_across_it(recorded):
    """The same trace and core without the recorder's registers, against them: before, 37 values were wrong."""
    seen = api.open_bundle(recorded).threads[0].values()
    alone = ThreadValues(seen.addresses, seen._read_code, end=seen.end, end_after_last=seen.end_after_last,
                         interrupted=seen.interrupted)  # fmt: skip
    known = 0
    for position in range(seen.count + 1):
        recovered, recorded_there = alone.registers_at(position), seen.registers_at(position)
        for name, value in recovered.items():
            if value is not None:
                known += 1
                assert value == recorded_there[name], (position, name)
    assert known and alone.conflicts == 0


def test_telling_signals_from_branches_scans_each_branch_once(tmp_path, monkeypatch):
    """A handler returns later in the trace, so each ``jmp *`` and ``call *`` before it may be a signal: the code it
    enters is scanned for a ret to the trampoline.  That scan asked the same of every such branch it met, which
    scanned again: recorded from the process's first instruction (ld.so's startup, 110,000 instructions), laying out
    the windows took over 17 minutes.  Each branch is now scanned once, the scan counting the ones it meets as the
    jumps they look like."""
    binary = tmp_path / "program"
    build_program(SOURCES / "signal_handler.c", ["-O0"], binary)
    out = tmp_path / "rec"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--from-start", "-o", str(out), "--", str(binary)]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    values = api.open_bundle(out / "trace.json").threads[0].values()
    scans, entered = [], values._signals.entered

    def once(position):
        assert position not in scans, f"the branch after position {position} was scanned again"
        scans.append(position)
        return entered(position)

    monkeypatch.setattr(values._signals, "entered", once)
    for number in range(values.chunks):
        values._structure(number)
    assert values.count > 100_000 and scans


@pytest.mark.parametrize("known", ["the end core", "both cores"])
def test_a_sigreturn_through_a_handmade_frame_is_no_ordinary_call(tmp_path, known):
    """handmade_sigreturn.c runs rt_sigreturn on a frame it filled, its number set two instructions before the
    syscall, and the frame resumes at the syscall's fall-through: the syscall was taken for one that leaves rbx,
    rdx and rbp alone (388 wrong values from both cores).  A syscall whose number the recorder or the constants
    before it do not give now leaves every register unknown; one they say is 15 loads them from the frame."""
    binary = tmp_path / "handmade_sigreturn"
    build_program(SOURCES / "handmade_sigreturn.c", ["-O0"], binary)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "rec"), "--", str(binary)]
    subprocess.run(command, capture_output=True, timeout=300, check=True)
    seen = api.open_bundle(tmp_path / "rec" / "trace.json").threads[0].values()
    start = {"start": seen.start} if known == "both cores" else {}
    alone = ThreadValues(seen.addresses, seen._read_code, end=seen.end, end_after_last=seen.end_after_last, **start)
    for position in range(seen.count + 1):
        recovered, recorded_there = alone.registers_at(position), seen.registers_at(position)
        for name, value in recovered.items():
            assert value in (None, recorded_there[name]), (position, name)
