"""One thread's intel_pt event (IntelPtThreadEvent): opening it, its read logic, and a real trace.

Opening runs against the real kernel with a software PMU; the read logic
(pause, copy the AUX ring in trace order, resume) against a fake event
(support/perf_events.py).  Only the last test needs Intel PT.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.perf_events import FakeEvent, open_dummy, open_fd_count

from lldb_trace.capture.intel_pt import pmu as ipt
from lldb_trace.capture.intel_pt.perf_event_errors import PerfPermissionError, PerfUnsupportedError
from lldb_trace.capture.intel_pt.thread_event import IntelPtThreadEvent
from lldb_trace.perf.attr import PERF_TYPE_SOFTWARE

REAL_SYSFS = Path(ipt.SYSFS_ROOT)


# -- opening one thread's event --------------------------------------------------------------------


def test_real_thread_event_on_a_pmu_without_aux_cleans_up(tmp_path):
    open_dummy().close()
    software = ipt.PmuInfo(tmp_path, PERF_TYPE_SOFTWARE)  # no formats: config 0 = PERF_COUNT_SW_CPU_CLOCK
    before = open_fd_count()
    with pytest.raises(PerfUnsupportedError, match="EOPNOTSUPP"):
        IntelPtThreadEvent(threading.get_native_id(), 8, pmu=software)
    assert open_fd_count() == before


# -- IntelPtThreadEvent's read logic, with a fake event --------------------------------------------


def test_read_pauses_copies_and_resumes():
    event = FakeEvent()
    trace = IntelPtThreadEvent.from_event(5, event)
    event.write(b"abcde")
    assert trace.read() == b"abcde"
    assert event.calls == ["disable", "head", "copy", "enable"]
    assert event.enabled
    assert trace.buffer_size == 16


def test_read_after_wrap_is_in_trace_order():
    event = FakeEvent(size=8)
    trace = IntelPtThreadEvent.from_event(5, event)
    event.write(b"0123456789ABC")
    assert trace.read() == b"56789ABC"
    event.write(b"DE")
    assert trace.read() == b"789ABCDE"


def test_changed_tells_when_there_is_something_new():
    event = FakeEvent(size=8)
    trace = IntelPtThreadEvent.from_event(5, event)
    assert not trace.changed()
    event.write(b"xy")
    assert trace.changed()
    trace.read()
    assert not trace.changed()
    event.write(b"z")
    assert trace.changed()
    assert trace.read() == b"xyz"
    assert not trace.changed()


def test_read_resumes_even_when_the_copy_fails():
    event = FakeEvent()
    event.fail_copy = True
    trace = IntelPtThreadEvent.from_event(5, event)
    with pytest.raises(RuntimeError):
        trace.read()
    assert event.calls[-1] == "enable"
    assert event.enabled


def test_read_leaves_a_paused_event_paused():
    event = FakeEvent()
    event.enabled = False
    trace = IntelPtThreadEvent.from_event(5, event)
    event.write(b"q")
    assert trace.read() == b"q"
    assert "enable" not in event.calls and "disable" not in event.calls


def test_close():
    event = FakeEvent()
    with IntelPtThreadEvent.from_event(5, event) as trace:
        assert not trace.closed
    assert event.closed and trace.closed
    trace.close()  # twice is fine
    with pytest.raises(ipt.IntelPtUnavailableError, match="thread 5 is closed"):
        trace.read()
    with pytest.raises(ipt.IntelPtUnavailableError, match="closed"):
        trace.changed()


# -- hardware --------------------------------------------------------------------------------------

PSB = bytes([0x02, 0x82] * 8)


def _cpu_ticks(pid):
    """User plus system CPU time the process has used, in clock ticks (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _run_a_little(pid):
    """Let the stopped child run until it used CPU time of its own (progress, not a wall-clock wait); stop it again."""
    ticks = _cpu_ticks(pid)
    os.kill(pid, signal.SIGCONT)
    while _cpu_ticks(pid) < ticks + 2:
        time.sleep(0.01)  # polling the child's progress
    os.kill(pid, signal.SIGSTOP)
    os.waitpid(pid, os.WUNTRACED)  # returns once it is stopped


@pytest.mark.skipif(not REAL_SYSFS.exists(), reason="needs an Intel CPU with the intel_pt PMU")
def test_hardware_trace_of_a_busy_child():
    try:
        pmu = ipt.check_available()
    except ipt.IntelPtUnavailableError as exc:
        pytest.skip(str(exc))
    child = subprocess.Popen([sys.executable, "-c", "while True: sum(range(100))"])
    os.kill(child.pid, signal.SIGSTOP)
    os.waitpid(child.pid, os.WUNTRACED)
    try:
        try:
            trace = IntelPtThreadEvent(child.pid, 64, tsc=True, pmu=pmu)
        except PerfPermissionError as exc:
            pytest.skip(str(exc))
        with trace:
            _run_a_little(child.pid)
            assert trace.changed()
            data = trace.read()
            assert 0 < len(data) <= 64 * 1024
            assert PSB in data
            assert not trace.changed()  # stopped: nothing new
            _run_a_little(child.pid)
            assert trace.changed()
            assert PSB in trace.read()
    finally:
        child.kill()
        child.wait()
