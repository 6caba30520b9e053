"""pt stop keeps the recorded trace readable and savable until the process runs on, with either backend."""

import json

import pytest
from support.sample_trace import SAMPLE

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.launching import launchable  # noqa: E402
from support.lldb_output import listed  # noqa: E402
from support.lldb_session import Session  # noqa: E402
from support.perf_events import FakeEvent  # noqa: E402

from lldb_trace.bundle.model import CpuInfo  # noqa: E402
from lldb_trace.capture.intel_pt import pmu as intel_pt_pmu  # noqa: E402
from lldb_trace.capture.intel_pt import thread_event as intel_pt_event  # noqa: E402
from lldb_trace.debugger import live_session as live  # noqa: E402

DROPPED = "ran on untraced after 'pt stop', so its trace was dropped"


def routed(session, command):
    """Run a routed built-in; its output and errors go to the debugger's streams: return what it added."""
    out_before, err_before = session.streams()
    session.handle(command)
    out, err = session.streams()
    return out[len(out_before) :], err[len(err_before) :]


def test_software_trace_stays_readable_and_savable_until_the_process_runs_on(session, tmp_path, monkeypatch):
    program = launchable(tmp_path, monkeypatch, "basic.c", "-O0")
    session.launch(program, "-n fib")
    session.ok("pt start --backend software")
    session.handle("continue")  # recorded, to the recursive call of fib
    recorded = session.ok("pt dump -i --all")
    assert "basic`fib" in recorded
    assert "'trace dump' and 'trace save' read its trace until it runs on" in session.ok("pt stop")
    assert session.ok("pt dump -i --all") == recorded
    assert "software recorder; tracing stopped" in session.ok("pt dump")
    assert "recording already stopped" in session.handle("pt stop").GetError()
    session.handle("expression (int)getpid()")  # runs the process, but leaves the thread where it stopped
    assert session.ok("pt dump -i --all") == recorded
    rbx = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).FindRegister("rbx").GetValue()
    _out, err = routed(session, f"trace save {tmp_path / 'saved'}")
    assert not err and (tmp_path / "saved" / "trace.json").exists()
    saved = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]
    pid = session.target.GetProcess().GetProcessID()
    # the process still stands where its trace ends: its core and the registers the recorder saw are saved
    assert saved["coreFile"] == f"cores/{pid}.core" and saved["startCoreFile"] == "cores/start.core"
    assert saved["threads"][0]["registerStates"].startswith("registers/")

    session.handle("continue")  # LLDB's own continue: untraced, to the next call of fib
    error = session.handle("pt dump -i").GetError()
    pid = session.target.GetProcess().GetProcessID()
    assert error == f"error: target #0 has no trace: process {pid} {DROPPED} ('trace save' before resuming keeps one;" \
        " 'pt start' records again)\n"  # fmt: skip
    assert DROPPED in routed(session, f"trace save {tmp_path / 'later'}")[1]
    assert DROPPED in session.handle("pt dump").GetError()  # the reason stays, lookup after lookup

    session.ok("pt start --backend software")  # a new recording replaces the dropped one
    session.handle("continue")
    assert "basic`fib" in session.ok("pt dump -i")
    session.ok("pt stop")
    thread = session.target.GetProcess().GetSelectedThread()
    start_pc = thread.GetFrameAtIndex(0).GetPC()
    session.ok("pt start --backend software")  # at once, while the stopped trace is still readable
    assert "live trace: 0 bytes (software recorder)" in session.ok("pt dump")
    session.handle("continue")
    first = listed(session.ok("pt dump -i --forwards -c 1"))
    assert first == [(0, start_pc)]  # the new recording, not the stopped one

    (tmp_path / "fresh").mkdir()
    fresh = Session(tmp_path / "fresh")
    try:
        fresh.ok(f"pt load {tmp_path / 'saved'}")
        assert fresh.ok("pt dump -i --all").splitlines()[1:] == recorded.splitlines()[1:]
        assert f"rbx = {rbx}" in fresh.ok("register read rbx")  # from the end core, at the end of history
    finally:
        fresh.close()


def test_intel_pt_trace_is_read_a_last_time_and_kept_after_pt_stop(session, tmp_path, monkeypatch):
    """The Intel PT backend at its syscall boundary: fake perf events, the real session, stop hook and commands."""
    events = {}
    real_thread_event = intel_pt_event.IntelPtThreadEvent

    def thread_event(tid, buffer_kb, **_options):
        events[tid] = FakeEvent(size=4096)
        return real_thread_event.from_event(tid, events[tid])

    monkeypatch.setattr(intel_pt_pmu, "check_available", lambda: "pmu")
    monkeypatch.setattr(intel_pt_event, "IntelPtThreadEvent", thread_event)
    program = launchable(tmp_path, monkeypatch, "basic.c", "-O0")
    session.launch(program, "-n fib")
    assert "Intel PT (perf_event_open)" in session.ok("pt start --backend intel-pt")
    [(tid, event)] = events.items()
    stream = (SAMPLE / "4242.ipt").read_bytes()
    event.write(stream[:40])  # what the hardware wrote before the next stop
    session.handle("continue")  # LLDB's own: the stop hook reads the buffers at the stop
    assert live.session_for(session.target).trace.trace_bytes(tid) == stream[:40]
    event.write(stream[40:])  # written after the hook's read: only pt stop's last read sees it
    session.ok("pt stop")
    assert event.closed  # the perf events are released at once
    assert "Stop hook" not in session.ok("target stop-hook list")
    info = json.loads(session.ok("pt dump --json"))["threads"][0]["live"]
    assert info == {"backend": "intel-pt; tracing stopped", "bytes": len(stream)}
    assert not routed(session, f"trace save {tmp_path / 'saved'}")[1]
    saved = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]["threads"][0]
    assert (tmp_path / "saved" / saved["iptTrace"]).read_bytes() == stream

    session.handle("continue")
    assert DROPPED in session.handle("pt dump").GetError()


class _ThreadsAppearLater:
    """An Intel PT backend (--all) that has no thread yet: the first stop finds one, as when threads start."""

    name = "intel-pt"
    cpu = CpuInfo("intel", 6, 106, 6)
    all_threads = True
    drives_stepping = False

    def __init__(self, *_options):
        self.traces, self.reads = {}, 0

    def add_thread(self, tid):
        self.traces[tid] = None

    def read_all(self):
        self.reads += 1

    def snapshot(self):
        return dict.fromkeys(self.traces)

    def trace_bytes(self, tid):
        return None

    def generation(self, tid):
        return 0

    def close(self):
        pass


def test_the_stop_hook_follows_an_intel_pt_session_that_picked_up_new_threads(session, tmp_path, monkeypatch):
    """A stop that finds new threads registers the session again (a new key): later stops must still read."""
    backend = _ThreadsAppearLater()
    monkeypatch.setattr(live, "IntelPtBackend", lambda *_options: backend)
    program = launchable(tmp_path, monkeypatch, "basic.c", "-O0")
    session.launch(program, "-n fib")
    session.ok("pt start --backend intel-pt --all")
    for _ in range(3):  # fib calls itself: each continue stops at the breakpoint again
        session.handle("continue")
    assert list(backend.traces) == [session.target.GetProcess().GetSelectedThread().GetThreadID()]
    assert backend.reads == 3
    session.ok("pt stop")


def test_a_process_that_exited_keeps_its_trace_and_says_how_to_move_through_it(session, tmp_path, monkeypatch):
    """Movements said "stop it (process interrupt)", which an exited process cannot be, and 'pt stop' dropped the
    trace at the next lookup, as if the process had run on."""
    program = launchable(tmp_path, monkeypatch, "recursion.c", "-O0")
    session.launch(program, "-n main")
    session.ok("pt start --backend software")
    session.handle("continue")
    process = session.target.GetProcess()
    assert process.GetState() == lldb.eStateExited
    error = session.handle("pt goto 100").GetError()
    assert f"process {process.GetProcessID()} has exited: its trace stays readable" in error
    assert "'trace save PATH' it, then 'trace load PATH'" in error
    session.ok("pt stop")
    assert "tracing stopped" in session.ok("pt dump")
    _out, err = routed(session, f"trace save {tmp_path / 'saved'}")
    assert not err and (tmp_path / "saved" / "trace.json").exists()
