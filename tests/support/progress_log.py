"""A progress reporter for tests (lldb_trace.progress): it logs what it is told."""


class Recorder:
    """A reporter that logs what it is told and asks to stop at its ``stop_at``-th check."""

    def __init__(self, stop_at=None):
        self.stop_at, self.checks, self.log = stop_at, 0, []

    def interrupt_requested(self):
        self.checks += 1
        return self.stop_at is not None and self.checks >= self.stop_at

    def begin(self, title, total):
        self.log.append(("begin", title, total))
        return title

    def advance(self, handle, done):
        self.log.append(("advance", handle, done))

    def end(self, handle):
        self.log.append(("end", handle))
