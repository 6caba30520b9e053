"""perf events for the capture tests: a software event any kernel opens, a fake Intel PT event, sysfs-like files."""

import os
import threading

import pytest

from lldb_trace.capture.intel_pt import perf_event as pe
from lldb_trace.capture.intel_pt import perf_event_errors as errors
from lldb_trace.perf.attr import PERF_COUNT_SW_DUMMY, PERF_TYPE_SOFTWARE, perf_event_attr


def written(path, text):
    """``path`` with ``text`` in it, as the kernel's /proc and /sys files hold one value a line."""
    path.write_text(text)
    return path


def dummy_attr(disabled=1):
    """A software dummy event: the kernel opens it without Intel PT, so the real syscalls run anywhere."""
    attr = perf_event_attr(type=PERF_TYPE_SOFTWARE, config=PERF_COUNT_SW_DUMMY)
    attr.disabled = disabled
    attr.exclude_kernel = 1
    attr.exclude_hv = 1
    return attr


def open_dummy(tid=None, disabled=1):
    """The dummy event of thread ``tid`` (this one by default); skips where perf events are not allowed."""
    try:
        return pe.PerfEvent.open(dummy_attr(disabled), tid or threading.get_native_id(), what="dummy event")
    except errors.PerfPermissionError as exc:
        pytest.skip(f"perf_event_open is not allowed here: {exc}")


def open_fd_count():
    """How many file descriptors this process holds open: what a failed open must leave unchanged."""
    return len(os.listdir("/proc/self/fd"))


class FakeEvent:
    """Stands for a PerfEvent whose AUX area is ``ring`` and whose kernel reports ``head``."""

    def __init__(self, size=16):
        self.ring = bytearray(size)
        self.head = 0
        self.enabled = True
        self.calls = []
        self.fail_copy = False
        self.closed = False

    def write(self, data):
        """What the hardware does in snapshot mode: write on, wrapping; report the offset."""
        for byte in data:
            self.ring[self.head] = byte
            self.head = (self.head + 1) % len(self.ring)

    @property
    def aux_size(self):
        return len(self.ring)

    @property
    def aux_head(self):
        self.calls.append("head")
        return self.head

    def aux_bytes(self):
        self.calls.append("copy")
        if self.fail_copy:
            raise RuntimeError("copy failed")
        return bytes(self.ring)

    def disable(self):
        self.calls.append("disable")
        self.enabled = False

    def enable(self):
        self.calls.append("enable")
        self.enabled = True

    def close(self):
        self.closed = True
