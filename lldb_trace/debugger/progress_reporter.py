"""Long work inside LLDB: shown with LLDB's progress API, stopped by its interrupt (Ctrl-C).

lldb_trace.progress asks a reporter; this one turns each task into an
``SBProgress`` (LLDB >= 20 shows it in its status line and sends progress
events to IDEs) and answers "was Ctrl-C pressed?" with
``SBDebugger.InterruptRequested``.  On an LLDB without ``SBProgress`` a task
that runs longer than a second prints a line on the error stream instead.
"""

import time

import lldb

_QUIET_SECONDS = 1.0  # without SBProgress: say nothing of work shorter than this


class LldbReporter:
    def __init__(self, debugger):
        self.debugger = debugger

    def interrupt_requested(self):
        return self.debugger.InterruptRequested()

    def begin(self, title, total):
        if hasattr(lldb, "SBProgress"):
            shown = lldb.SBProgress(title, "", total, self.debugger) if total else None
            return _Shown(shown or lldb.SBProgress(title, "", self.debugger), total)
        return _Line(self.debugger, title, total)

    def advance(self, handle, done):
        handle.advance(done)

    def end(self, handle):
        handle.end()


class _Shown:
    """A task as an SBProgress: increments of the units done since the last report."""

    def __init__(self, progress, total):
        self.progress, self.total, self.done = progress, total, 0

    def advance(self, done):
        done = min(done, self.total)
        if done > self.done:
            self.progress.Increment(done - self.done)
            self.done = done

    def end(self):
        self.progress.Finalize()


class _Line:
    """A task as a line on the error stream once it has run a second, then at every quarter."""

    def __init__(self, debugger, title, total):
        self.debugger, self.title, self.total = debugger, title, total
        self.started, self.shown = time.monotonic(), -1

    def advance(self, done):
        if not self.total or time.monotonic() - self.started < _QUIET_SECONDS:
            return
        quarter = min(4, done * 4 // self.total)
        if quarter > self.shown:
            self.shown = quarter
            self.debugger.GetErrorFile().Write(f"{self.title}: {quarter * 25}%\n".encode())

    def end(self):
        pass
