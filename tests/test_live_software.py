"""pt start --backend software on a real process, then trace save and a fresh load: the round trip.

Also: which backend pt start picks, what a stop does, finish from a breakpoint, a crash.  That the recorded
path is the one single steps see is test_live_software_paths.py.
"""

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.launching import launchable  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace.bundle.model import CpuInfo  # noqa: E402
from lldb_trace.debugger import live_session as live  # noqa: E402
from lldb_trace.debugger.recording_plan import RecordingPlan  # noqa: E402

pytestmark = pytest.mark.usefixtures("live_addresses_kept")


@pytest.fixture
def program(tmp_path, monkeypatch):
    return launchable(tmp_path, monkeypatch, "basic.c", "-O0", directory=tmp_path / "build")


def test_recorded_stops_round_trip_through_a_saved_bundle(program, tmp_path):
    (tmp_path / "live").mkdir()
    session = Session(tmp_path / "live")
    try:
        session.launch(program, "-n fib")
        process = session.target.GetProcess()
        assert process.GetState() == lldb.eStateStopped
        assert "software recorder" in session.ok("pt start --backend software")
        thread = process.GetSelectedThread()
        tid = thread.GetThreadID()
        depth = thread.GetNumFrames()
        session.handle("continue")  # to the recursive call: the breakpoint stops the recording
        assert thread.GetFrameAtIndex(0).GetFunctionName() == "fib" and thread.GetNumFrames() == depth + 1
        session.ok("breakpoint disable")  # or finish would stop in the next recursive call
        session.handle("finish")
        assert thread.GetNumFrames() == depth
        session.handle("next")
        pc = thread.GetFrameAtIndex(0).GetPC()
        trace = live.session_for(session.target).trace
        decoded = trace.decoded(tid)
        assert decoded.end_ip == pc  # the trace ends where the thread stands
        truth = list(live.session_for(session.target).backend.recorders[tid].truth.addresses)
        addresses = [item.address for item in trace.cursor(tid, forwards=True).items()]
        assert addresses == truth and len(truth) > 20
        before = session.ok("pt dump -i --all"), session.ok("pt dump -C --all")
        session.ok(f"trace save {tmp_path / 'saved'} --copy-images")
        process.Kill()
    finally:
        session.close()
    shutil.move(program, tmp_path / "moved-away")
    document = json.loads((tmp_path / "saved" / "trace.json").read_text())
    assert document["processes"][0]["threads"] == [
        {"tid": tid, "iptTrace": f"traces/{tid}.intelpt_trace", "registerStates": f"registers/{tid}.npz"}
    ]  # the registers at each stop of the recorder
    vdso = [m for m in document["processes"][0]["modules"] if m["systemPath"] == "[vdso]"]
    assert vdso and (tmp_path / "saved" / vdso[0]["file"]).read_bytes().startswith(b"\x7fELF")  # from memory
    (tmp_path / "fresh").mkdir()
    fresh = Session(tmp_path / "fresh")
    try:
        fresh.ok(f"trace load {tmp_path / 'saved' / 'trace.json'}")
        after = fresh.ok("pt dump -i --all"), fresh.ok("pt dump -C --all")
        assert fresh.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetPC() == pc
    finally:
        fresh.close()
    assert after == before


def test_start_needs_a_stopped_live_process(tmp_path):
    session = Session(tmp_path)
    try:
        error = session.handle("pt start --backend software").GetError()
        assert "no live process" in error
        assert "not traced" in session.handle("pt stop").GetError()
        assert "unknown backend" in session.handle("pt start --backend bogus").GetError()
        session.ok(f"pt load {TRACES / 'sample' / 'trace.json'}")
        assert "a loaded trace, not a live process" in session.handle("pt start").GetError()
    finally:
        session.close()


def test_the_start_state_leaves_no_file_behind_and_a_failure_to_write_it_starts_nothing(program, tmp_path, monkeypatch):
    """LLDB never runs Python's atexit handlers: a start core kept in a folder was left in /tmp by every
    'pt start'.  It is an unlinked file now, read through the descriptor LLDB holds."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    session = Session(tmp_path)
    try:
        session.launch(program, "-n main")
        missing = tmp_path / "missing"  # no such folder: the start state cannot be kept
        monkeypatch.setattr(tempfile, "tempdir", str(missing))
        error = session.handle("pt start --backend software").GetError()
        assert f"cannot make a temporary file in {missing} for the start state: No such file" in error
        assert "not traced" in session.handle("pt stop").GetError()  # nothing was started
        monkeypatch.setattr(tempfile, "tempdir", str(temporary))
        session.ok("pt start --backend software")
        assert list(temporary.iterdir()) == []
        session.handle("next")
        session.ok("pt stop")
        session.ok("pt goto 0")
        assert "rsp = 0x" in session.ok("register read rsp")  # known from the start state
        session.ok(f"trace save {tmp_path / 'saved'}")  # from the history view: the live process is saved
        assert (tmp_path / "saved" / "cores" / "start.core").read_bytes().startswith(b"\x7fELF")
        pid = session.target.GetProcess().GetProcessID()
        saved = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]
        assert saved["coreFile"] == f"cores/{pid}.core" and saved["threads"][0]["registerStates"]
        assert list(temporary.iterdir()) == []
        session.target.GetProcess().Kill()
    finally:
        session.close()


@pytest.mark.skipif(Path("/sys/bus/event_source/devices/intel_pt").exists(), reason="this machine has Intel PT")
def test_without_intel_pt_auto_records_in_software_and_intel_pt_says_why(program, tmp_path):
    session = Session(tmp_path)
    try:
        session.launch(program, "-n main")
        error = session.handle("pt start --backend intel-pt").GetError()
        assert "no Intel PT" in error and "--backend software" in error
        assert "-b 3: the buffer size must be a power of two" in session.handle("pt start -b 3").GetError()
        assert "-b 0: the buffer size must be a power of two" in session.handle("pt start -b 0").GetError()
        error = session.handle("pt start --all").GetError()  # it recorded the selected thread alone, silently
        only = "--all traces every thread, later ones too, which only --backend intel-pt does"
        assert f"{only} (this CPU has no Intel PT)" in error
        assert "drop --all" in error and "not traced" in session.handle("pt stop").GetError()
        message = session.ok("pt start")
        assert "with the software recorder (this CPU has no Intel PT)." in message
        assert "already traced" in session.handle("pt start").GetError()
        session.ok("pt stop")
        session.ok("breakpoint set -n fib")
        session.handle("continue")  # untraced again: LLDB's own continue, stopping at the breakpoint
        thread = session.target.GetProcess().GetSelectedThread()
        assert thread.GetStopReason() == lldb.eStopReasonBreakpoint
        assert thread.GetFrameAtIndex(0).GetFunctionName() == "fib"
        session.target.GetProcess().Kill()
    finally:
        session.close()


class _FakeIntelPt:
    """Stands in for IntelPtBackend (no PMU here): records what a stop asks of it."""

    name = "intel-pt"
    cpu = CpuInfo("intel", 6, 106, 6)
    all_threads = True
    drives_stepping = False

    def __init__(self):
        self.traces, self.reads, self.closed = {}, 0, False

    def add_thread(self, tid):
        self.traces[tid] = b""

    def read_all(self):
        self.reads += 1

    def trace_bytes(self, tid):
        return None

    def generation(self, tid):
        return 0

    def close(self):
        self.closed = True


def test_a_stop_picks_up_new_threads_and_reads_the_buffers(program, tmp_path):
    """What the stop hook runs for --all: threads not yet traced are added, then every buffer is read."""
    session = Session(tmp_path)
    try:
        session.launch(program, "-n main")
        backend = _FakeIntelPt()
        live_session = live.LiveSession(session.target, backend, [])
        live_session.stopped()
        tid = session.target.GetProcess().GetSelectedThread().GetThreadID()
        assert live_session.tids == [tid] and backend.reads == 1
        assert live.session_for(session.target).trace.tids == [tid]
        live_session.close()
        assert backend.closed and live.session_for(session.target) is None
        session.target.GetProcess().Kill()
    finally:
        session.close()


def test_finish_from_a_breakpoint_on_a_return_stops_in_the_caller(tmp_path, monkeypatch):
    """At -O2, finished() is a lone ``ret`` with a breakpoint on it: LLDB steps over that breakpoint
    itself, and the recorder's stop right after it (back in main) must not be lost."""
    binary = launchable(tmp_path, monkeypatch, "million.c", "-O2", "-DN=3")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n finished")
        thread = session.target.GetProcess().GetSelectedThread()
        return_address = thread.GetFrameAtIndex(1).GetPC()
        session.ok("pt start --backend software")
        session.handle("finish")
        assert session.target.GetProcess().GetState() == lldb.eStateStopped
        assert thread.GetFrameAtIndex(0).GetPC() == return_address
        assert thread.GetFrameAtIndex(0).GetFunctionName() == "main"
        items = list(live.session_for(session.target).trace.cursor(thread.GetThreadID(), forwards=True).items())
        assert [item.address for item in items] == [session.target.FindFunctions("finished")[0].GetSymbol()
                                                    .GetStartAddress().GetLoadAddress(session.target)]  # fmt: skip
        session.target.GetProcess().Kill()
    finally:
        session.close()


@pytest.mark.parametrize("predicting", [True, False], ids=["predicted", "branch-by-branch"])
def test_a_crash_is_recorded_up_to_the_faulting_instruction(predicting, tmp_path, monkeypatch):
    """The recorder's plan never sees the SIGSEGV stop; the run it was on is caught up when the trace is read."""
    if not predicting:
        monkeypatch.setattr(RecordingPlan, "_predict", lambda _plan, _frame: None)
    binary = launchable(tmp_path, monkeypatch, "crash.c", "-O0")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main", output=tmp_path / "stdout.txt")
        session.ok("pt start --backend software")
        session.handle("continue")
        target = session.target
        thread = target.GetProcess().GetSelectedThread()
        assert thread.GetStopReason() == lldb.eStopReasonSignal and thread.GetStopReasonDataAtIndex(0) == 11
        pc = thread.GetFrameAtIndex(0).GetPC()
        live_session = live.session_for(target)
        [tid] = live_session.tids
        assert live_session.trace.decoded(tid).end_ip == pc
        addresses = [item.address for item in live_session.trace.cursor(tid, forwards=True).items()]
        assert addresses == list(live_session.backend.recorders[tid].truth.addresses) and len(addresses) > 1000
        last = target.ReadInstructions(lldb.SBAddress(addresses[-1], target), 1)[0]
        assert addresses[-1] + last.GetByteSize() == pc  # the load before the faulting one ran; that one did not
        session.handle("continue")  # the signal kills the process as it resumes: nothing more ran
        assert target.GetProcess().GetState() == lldb.eStateExited and target.GetProcess().GetExitStatus() == 11
        after = list(live_session.trace.cursor(tid, forwards=True).items())
        assert [item.address for item in after] == addresses  # no gap, and the last load stays (both went)
    finally:
        session.close()


def test_a_breakpoint_another_thread_hits_selects_that_thread_and_continue_goes_on(tmp_path, monkeypatch):
    """threads.c's main thread is recorded while its workers run untraced: a worker stopping at a breakpoint is
    the thread `continue` selects (as without the recorder, not the recorded one, stopped after a step), and the
    next `continue` runs the recorded thread again rather than refusing the untraced one selected."""
    program = launchable(tmp_path, monkeypatch, "threads.c", "-O0", "-pthread", directory=tmp_path / "build")
    session = Session(tmp_path)
    try:
        session.launch(program, "-n main")
        session.ok("pt start --backend software")
        traced = session.target.GetProcess().GetSelectedThread().GetThreadID()
        session.ok("process handle SIGUSR1 --stop false --notify false")
        session.ok("breakpoint set -n worker")
        workers = set()
        for _ in range(2):
            session.handle("continue")
            thread = session.target.GetProcess().GetSelectedThread()
            assert thread.GetStopReason() == lldb.eStopReasonBreakpoint, session.streams()
            assert thread.GetFrameAtIndex(0).GetFunctionName() == "worker" and thread.GetThreadID() != traced
            workers.add(thread.GetThreadID())
        assert len(workers) == 2
    finally:
        session.close()
