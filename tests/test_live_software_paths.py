"""The live software recorder records the path single steps see: predicted, branch by branch, or single-stepped.

Each program runs under ``pt start --backend software`` and the trace is
compared with ptrace single steps of the same run (the standalone recorder)
or with the path recorded branch by branch: the emulator's predictions,
library code, ``next`` and ``step`` running calls out, a misprediction, a
silent signal handler, the vdso's clock code.
"""

import subprocess

import lldb
import pytest
from support.paths import SOURCES

pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.launching import launchable
from support.lldb_session import Session

from lldb_trace import api as pt
from lldb_trace.debugger import live_session as live
from lldb_trace.debugger.recording_plan import RecordingPlan
from lldb_trace.decode.decoded_thread import Gap
from lldb_trace.values.machine_state import TRACKED

pytestmark = pytest.mark.usefixtures("live_addresses_kept")


def _live_and_single_stepped(tmp_path, monkeypatch, source, flags, stops=()):
    """``continue`` from main to finished() in the live recorder, and the same run single-stepped by ptrace.

    The programs make no library calls, so the standalone recorder's single-stepped run of main up
    to finished() is independent ground truth.  ``stops`` are functions to stop at on the way (each
    breakpoint is deleted when hit).  Returns (truth, the live trace's addresses and gaps, backend).
    """
    from lldb_trace.capture.ptrace_recorder.recording import RecordOptions, record

    binary = launchable(tmp_path, monkeypatch, source, *flags)
    stepped = record(str(binary), [], RecordOptions(until="finished"))
    truth = list(next(iter(stepped.threads.values())).truth.addresses)

    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main")
        target = session.target
        main, finished = (
            target.FindFunctions(name)[0].GetSymbol().GetStartAddress().GetLoadAddress(target)
            for name in ("main", "finished")
        )
        session.ok("breakpoint delete --force")
        thread = target.GetProcess().GetSelectedThread()
        pc = thread.GetFrameAtIndex(0).GetPC()
        session.ok("pt start --backend software")
        for name in stops:
            session.ok(f"breakpoint set -n {name}")
            session.handle("continue")
            assert thread.GetFrameAtIndex(0).GetFunctionName() == name
            session.ok("breakpoint delete --force")
        session.ok(f"breakpoint set -a {finished}")
        session.handle("continue")
        assert thread.GetFrameAtIndex(0).GetPC() == finished
        backend = live.session_for(target).backend
        trace = live.session_for(target).trace
        items = [item.gap or item.address for item in trace.cursor(thread.GetThreadID(), forwards=True).items()]
        target.GetProcess().Kill()
    finally:
        session.close()
    assert truth[0] == main and pc in truth[:8]  # main's breakpoint is past its prologue
    return truth[truth.index(pc) :], items, backend


@pytest.mark.parametrize("optimization", ["-O0", "-O2"])
def test_continue_records_what_single_stepping_records(optimization, tmp_path, monkeypatch):
    """The emulator's prediction, checked against the thread's registers, is the path ptrace single steps see.

    branches.c has every kind of branch (each jcc condition, returns, a jump table, calls through
    pointers) and nothing the emulator must not run: the run is one prediction.
    """
    truth, addresses, backend = _live_and_single_stepped(tmp_path, monkeypatch, "branches.c", [optimization])
    assert len(truth) > 2000
    assert addresses == truth
    assert list(backend.predictions.values()) == [1] and list(backend.mispredictions.values()) == [0]


@pytest.mark.parametrize("optimization", ["-O0", "-O2"])
def test_continue_records_what_single_stepping_records_without_the_emulator(optimization, tmp_path, monkeypatch):
    """Branch by branch (the successor read from the registers at each stop): the same path again."""
    monkeypatch.setattr(RecordingPlan, "_predict", lambda _plan, _frame: None)
    truth, addresses, backend = _live_and_single_stepped(tmp_path, monkeypatch, "branches.c", [optimization])
    assert addresses == truth
    assert list(backend.predictions.values()) == [0]


def test_the_emulator_stops_before_what_it_cannot_know(tmp_path, monkeypatch):
    """System calls, rdtsc, x87, AVX and a shared mapping end predictions; the real thread runs them.

    With at most 100 blocks per prediction, loops are cut where the thread passes least often.
    """
    from lldb_trace.capture.live_software import emulation

    monkeypatch.setattr(emulation, "MAX_BLOCKS", 100)
    with open("/proc/cpuinfo") as cpuinfo:
        avx = " avx " in cpuinfo.read()
    flags = ["-O1", *(["-DWITH_AVX"] if avx else [])]
    truth, addresses, backend = _live_and_single_stepped(tmp_path, monkeypatch, "unpredictable.c", flags)
    assert addresses == truth
    (predictions,), (single_steps,) = backend.predictions.values(), backend.single_steps.values()
    assert predictions > 40 and single_steps >= 6  # the getpid calls and mmap are single-stepped
    assert list(backend.mispredictions.values()) == [0]


def test_predictions_through_the_c_library_follow_the_same_path_as_branch_by_branch(tmp_path, monkeypatch):
    """qsort, snprintf of a double, malloc, AVX string functions, stdout writes: real library code.

    Launched by LLDB both times (the same environment, so the same path), once predicted by the
    emulator and once branch by branch (which test_continue_records_what_single_stepping_records
    holds to ptrace single steps).
    """
    # One round makes every call above (stdout too) in 56,000 instructions; branch by branch stops about 12,000 times.
    binary = launchable(tmp_path, monkeypatch, "libc_work.c", "-O2", "-DROUNDS=1")

    def recorded():
        session = Session(tmp_path)
        try:
            session.launch(binary, "-n main", "-n finished", output=tmp_path / "stdout.txt")
            session.ok("pt start --backend software")
            session.handle("continue")
            thread = session.target.GetProcess().GetSelectedThread()
            assert thread.GetFrameAtIndex(0).GetFunctionName() == "finished"
            live_session = live.session_for(session.target)
            [tid] = live_session.tids
            items = [item.gap or item.address for item in live_session.trace.cursor(tid, forwards=True).items()]
            assert items == list(live_session.backend.recorders[tid].truth.addresses)
            session.target.GetProcess().Kill()
            return items, live_session.backend
        finally:
            session.close()

    predicted, backend = recorded()
    [(tid, predictions)] = backend.predictions.items()
    assert predictions > 100 and backend.mispredictions[tid] == 0
    with monkeypatch.context() as patch:
        patch.setattr(RecordingPlan, "_predict", lambda _plan, _frame: None)
        branch_by_branch, _ = recorded()
    assert predicted == branch_by_branch and len(predicted) > 50_000


def test_next_runs_a_library_call_out_as_single_steps_would_record_it(tmp_path, monkeypatch):
    """``next`` over snprintf runs the call out with predictions instead of single-stepping it, and
    records the same path as single steps (a ``continue`` to the next line's breakpoint, every
    instruction single-stepped).

    Bound at load time (-z now), so the first call does not go through ld.so's resolver.
    """
    binary = launchable(tmp_path, monkeypatch, "libc_work.c", "-O0", "-DROUNDS=1", "-Wl,-z,now")
    source = SOURCES / "libc_work.c"
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if "snprintf(" in text)

    def recorded(*commands):
        session = Session(tmp_path)
        try:
            session.launch(binary, f"-f libc_work.c -l {line}", output=tmp_path / "stdout.txt")
            session.ok("pt start --backend software")
            for command in commands:
                session.handle(command)
            frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
            stopped_at = (frame.GetFunctionName(), frame.GetLineEntry().GetLine())
            live_session = live.session_for(session.target)
            [tid] = live_session.tids
            items = [item.address for item in live_session.trace.cursor(tid, forwards=True).items()]
            assert items == list(live_session.backend.recorders[tid].truth.addresses)
            session.target.GetProcess().Kill()
            return stopped_at, items, live_session.backend.single_steps[tid]
        finally:
            session.close()

    stopped_at, run_out, single_steps = recorded("next")
    with monkeypatch.context() as patch:
        patch.setattr(RecordingPlan, "_running", lambda _plan: False)
        stepped_at, stepped, all_steps = recorded(f"breakpoint set -f libc_work.c -l {line + 2}", "continue")
    assert stopped_at == stepped_at == ("main", line + 2)  # the call spans two lines
    assert run_out == stepped and len(stepped) > 2000
    assert all_steps == len(stepped) and single_steps < len(stepped) / 10


def test_step_runs_out_a_call_without_lines_and_stops_in_one_with_lines(tmp_path, monkeypatch):
    """As LLDB's own step-in: opaque_sum (built without -g) runs out, twice is stepped into."""
    opaque = launchable(tmp_path, monkeypatch, "opaque.c", "-O0", "-c", "-g0")
    source = SOURCES / "steps.c"
    binary = tmp_path / "steps"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(source), str(opaque)], check=True)
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if "opaque_sum(3000)" in text)
    session = Session(tmp_path)
    try:
        session.launch(binary, f"-f steps.c -l {line}")
        session.ok("pt start --backend software")
        thread = session.target.GetProcess().GetSelectedThread()
        session.handle("step")
        frame = thread.GetFrameAtIndex(0)
        assert (frame.GetFunctionName(), frame.GetLineEntry().GetLine()) == ("main", line + 1)
        assert "step in" in thread.GetStopDescription(100)
        backend = live.session_for(session.target).backend
        [(tid, single_steps)] = backend.single_steps.items()
        assert backend.steps(tid) > 20_000 and single_steps < 100  # opaque_sum ran out, not stepped
        session.handle("step")
        frame = thread.GetFrameAtIndex(0)  # past the prologue, at the body's first line, as LLDB's step-in
        body = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if "return 2 * x" in text)
        assert (frame.GetFunctionName(), frame.GetLineEntry().GetLine()) == ("twice", body)
        session.target.GetProcess().Kill()
    finally:
        session.close()


def test_a_misprediction_leaves_a_gap_not_wrong_instructions(tmp_path, monkeypatch):
    """When the thread does not end a stretch with the predicted registers, its path there is unknown.

    The emulator is given a wrong rbx: the real run still stops where it should, and the trace
    shows one gap where that stretch was, then exactly what ran after it.
    """
    from lldb_trace.capture.live_software import emulation

    predict = emulation.Predictor.predict
    calls = []

    def mispredict(predictor, registers, mappings, watched):
        calls.append(registers["rip"])
        return predict(predictor, {**registers, "rbx": registers["rbx"] ^ 0x10} if len(calls) == 1 else registers,
                       mappings, watched)  # fmt: skip

    monkeypatch.setattr(emulation.Predictor, "predict", mispredict)
    truth, items, backend = _live_and_single_stepped(tmp_path, monkeypatch, "branches.c", ["-O0"], stops=["pick"])
    assert list(backend.mispredictions.values()) == [1]
    gap, *after = items
    assert isinstance(gap, Gap) and all(isinstance(address, int) for address in after)
    assert after == truth[len(truth) - len(after) :] and len(after) > 1000
    # the registers kept at each stop name the instruction the trace holds there: the instructions the gap took
    # (those after the last packet before it, which no decoder sees) are not counted
    ((tid, _),) = backend.recorders.items()
    counts, rows = backend.state_arrays(tid)
    kept = [(count, rip) for count, rip in zip(counts.tolist(), rows[:, TRACKED.index("rip")].tolist(), strict=True)]
    assert kept and all(after[count] == rip for count, rip in kept if count < len(after))


def test_each_continue_stops_once_at_a_breakpoint_a_single_step_lands_on(tmp_path, monkeypatch):
    """With a silent signal handler the recorder single-steps, and steps land on breakpoints unexecuted.

    LLDB reports such a breakpoint only when the thread resumes.  The breakpoint is on the handler's
    second instruction (the step that delivers SIGALRM runs the first): each ``continue`` must
    stop at the next handler run, not at once at the same place.  Each command's plan leaves
    LLDB's plan stack when it stops, with its reason.
    """
    binary = launchable(tmp_path, monkeypatch, "signals.c", "-O0", "-pthread")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main")
        target = session.target
        handler = target.FindFunctions("on_alarm")[0].GetSymbol().GetStartAddress()
        second = target.ReadInstructions(handler, 2)[1].GetAddress().GetLoadAddress(target)
        session.ok(f"breakpoint set -a {second}")
        session.ok("pt start --backend software")
        thread = target.GetProcess().GetSelectedThread()
        counts = []
        for _ in range(3):
            session.handle("continue")
            assert thread.GetFrameAtIndex(0).GetPC() == second
            assert thread.GetStopDescription(100).startswith("breakpoint 2.1")
            counts.append(target.FindFirstGlobalVariable("handled").GetValueAsUnsigned())
        active = session.ok("thread plan list").split("Completed plan stack")[0]
        target.GetProcess().Kill()
    finally:
        session.close()
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2]
    assert "software recorder" not in active


def test_a_program_with_a_silent_signal_handler_is_recorded_by_single_steps(tmp_path, monkeypatch):
    """A handler for a signal lldb-server passes unseen must not run while the recorder runs to a branch.

    It could reach the breakpoint the run waits for and corrupt the recording, so once sigaction
    installs it the recorder single-steps.  The step that delivers the signal runs the handler's
    first instruction unseen; every handler run is recorded from its second instruction on, after
    a pause where the signal interrupted the loop.
    """
    binary = launchable(tmp_path, monkeypatch, "signals.c", "-O0", "-pthread")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main", "-n finished")
        session.ok("pt start --backend software")
        session.handle("continue")
        target = session.target
        thread = target.GetProcess().GetSelectedThread()
        assert thread.GetFrameAtIndex(0).GetFunctionName() == "finished"
        handled = target.FindFirstGlobalVariable("handled").GetValueAsUnsigned()
        main = target.FindFunctions("main")[0].GetSymbol()
        handler = target.FindFunctions("on_alarm")[0].GetSymbol().GetStartAddress()
        second = target.ReadInstructions(handler, 2)[1].GetAddress().GetLoadAddress(target)
        start, end = (address.GetLoadAddress(target) for address in (main.GetStartAddress(), main.GetEndAddress()))
        live_session = live.session_for(target)
        tid = thread.GetThreadID()
        backend = live_session.backend
        addresses = [item.address for item in live_session.trace.cursor(tid, forwards=True).items()]
        truth = list(backend.recorders[tid].truth.addresses)
        found = session.ok("pt find --function on_alarm")  # each run, though its first instruction is unseen
        target.GetProcess().Kill()
    finally:
        session.close()
    assert handled == 5 and addresses == truth
    assert found.count("signals`on_alarm") == handled
    assert addresses.count(second) == handled
    # Between signals the loop runs at least 40 iterations (signals.c): after the first signal, the
    # handler is installed and every instruction of the loop must have been single-stepped.
    looped = [address for address in addresses[addresses.index(second) :] if start <= address < end]
    assert len(looped) > 4 * 40 and backend.single_steps[tid] >= len(looped)


def test_vdso_clock_reads_run_untraced_instead_of_retrying_forever(tmp_path, monkeypatch):
    """The vdso's clock code retries until it reads the time within one kernel tick: stepped, it never returns.

    The recorder lets it run at full speed back to its caller and records tracing off in between (a
    TIP.PGD to the vdso, a TIP.PGE at the return address), so the trace holds exactly the instructions
    the recorder followed, a call into the vdso opens no call in the tree, and native lldb-22 decodes
    the saved bundle to the same instructions.  Values do not carry across the call: its code ran unseen.
    """
    from support import native_lldb

    binary = launchable(tmp_path, monkeypatch, "clock.c", "-O0")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main", "-n finished")
        session.ok("pt start --backend software")
        session.handle("continue")
        target = session.target
        thread = target.GetProcess().GetSelectedThread()
        assert thread.GetFrameAtIndex(0).GetFunctionName() == "finished"
        tid = thread.GetThreadID()
        live_session = live.session_for(target)
        trace = live_session.trace
        addresses = [item.address for item in trace.cursor(tid, forwards=True).items()]
        truth = list(live_session.backend.recorders[tid].truth.addresses)
        vdso = live_session.backend.vdso
        events = trace.decoded(tid).events
        calls = trace.call_forest(tid).calls()
        names = [target.ResolveLoadAddress(call.address).GetSymbol().GetName() for call in calls if call.depth == 1]
        session.ok(f"trace save {tmp_path / 'saved'}")
        target.GetProcess().Kill()
    finally:
        session.close()
    assert addresses == truth and not any(vdso[0] <= address < vdso[1] for address in addresses)
    off = [e.index for e in events if e.type.name == "DISABLED" and vdso[0] <= e.ip < vdso[1]]
    on = [e.index for e in events if e.type.name == "ENABLED" and e.index in off]
    assert len(off) == 3 and on == off  # three clock reads, each with tracing off and on before the same item
    assert [name.split("@")[0] for name in names] == ["clock_gettime"] * 3 + ["finished"]  # main's callees
    if native_lldb.available():
        assert native_lldb.decode_addresses(tmp_path / "saved" / "trace.json")[tid] == addresses
    # The values: nothing carries across code that ran unseen (the call's push was taken for the whole of it, and
    # rsp before the first read was shown 24 bytes off).  The clock code returned: rsp is the same after.
    values = pt.open_bundle(tmp_path / "saved" / "trace.json").threads[0].values()
    assert sorted(values.interrupted) == [index - 1 for index in off]
    for position in values.interrupted:
        after = values.registers_at(position + 1)["rsp"]
        assert values.registers_at(position)["rsp"] in (None, after) and after is not None


@pytest.mark.parametrize("known", [True, False], ids=["handler-recorded", "handler-unseen"])
def test_continue_past_a_signal_stop_records_its_handler_and_the_saved_trace_loads(known, tmp_path, monkeypatch):
    """fault_after_return.c: LLDB stops at the SIGSEGV; ``continue`` delivers it, and the handler runs to abort()'s
    SIGABRT, where LLDB stops again.  The first step enters the handler, so it is recorded from its second
    instruction (a run went through it unseen, and the trace showed a gap for all of it).  Where the recorder
    cannot tell that a handler takes the signal (``known`` False), the run ends off its way: a gap, and the trace
    ends where the thread stands, so ``trace save`` writes a core that matches it (the thread's new pc was once
    taken for the handler's first instruction, and the saved bundle was refused)."""
    if not known:
        monkeypatch.setattr(RecordingPlan, "_delivers_to_handler", lambda self: False)
    binary = launchable(tmp_path, monkeypatch, "fault_after_return.c", "-O0")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main")
        session.ok("pt start --backend software")
        target = session.target
        thread = target.GetProcess().GetSelectedThread()
        stops = []
        for _ in range(2):
            session.handle("continue")
            stops.append(thread.GetStopDescription(100))
        stopped_at = thread.GetFrameAtIndex(0).GetPC()
        handler = target.FindFunctions("on_fault")[0].GetSymbol().GetStartAddress()
        second = target.ReadInstructions(handler, 2)[1].GetAddress().GetLoadAddress(target)
        session.ok(f"trace save {tmp_path / 'saved'}")
        target.GetProcess().Kill()
    finally:
        session.close()
    assert "SIGSEGV" in stops[0] and "SIGABRT" in stops[1]
    saved = pt.open_bundle(tmp_path / "saved" / "trace.json").threads[0]  # refused if the core did not match
    assert saved.stop.pc == stopped_at
    items = [item.gap or item.address for item in saved.cursor().items()]
    gaps = [item for item in items if isinstance(item, Gap)]
    if known:
        assert not gaps and second in items  # the handler, from its second instruction on
    else:
        assert isinstance(items[0], Gap) and isinstance(items[1], int)  # the ret into the store, then the gap


def test_stop_in_the_past_start_again_and_resume_after_the_exit(tmp_path, monkeypatch):
    """``pt stop`` at a past position stops the process the view shows (it said "not traced"); ``pt start`` there
    says to go to the end first; ``continue`` after the process exited says so at once (it waited 5 s for a
    resume that could not come, and said "Resume timed out")."""
    binary = launchable(tmp_path, monkeypatch, "branches.c", "-O0")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main")
        session.ok("pt start --backend software")
        session.ok("next")
        session.ok("pt reverse-stepi")
        assert "Stopped tracing process" in session.ok("pt stop")
        refused = session.handle("pt start --backend software")
        assert not refused.Succeeded() and "'pt goto end' first" in refused.GetError()
        session.ok("pt goto end")
        session.ok("pt start --backend software")
        session.handle("continue")
        assert session.target.GetProcess().GetState() == lldb.eStateExited
        session.handle("continue")
        assert "is gone (exited): 'run' starts it again" in session.streams()[1]
    finally:
        session.close()
