"""Long work says how far it has got, and stops when the user asks (Ctrl-C).

Decoding a trace and building its call forest take seconds on traces of
hundreds of millions of instructions.  The layers that do that work know
nothing of LLDB: they open a :func:`task` and tell it how far they are; the
reporter installed with :func:`use` (LLDB's progress API, in the debugger
layer) shows it and says whether an interrupt was requested, and then the
task raises :class:`WorkInterruptedError`.  Without a reporter (the Python API, tests)
tasks cost a comparison per update.
"""

from contextlib import contextmanager

from .errors import LldbTraceError

_reporter = None  # what reports progress and interrupts: see use()
_UPDATES = 100  # a task is reported in about this many steps


class WorkInterruptedError(LldbTraceError):
    """The user interrupted long work; nothing partial was kept, so it can simply be run again."""


def use(reporter):
    """Report every task to ``reporter`` from now on (None: to nobody).  Returns the previous one.

    A reporter has ``begin(title, total) -> handle``, ``advance(handle, done)``, ``end(handle)`` and
    ``interrupt_requested() -> bool``.
    """
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


@contextmanager
def reporting(reporter):
    """Report to ``reporter`` inside the ``with`` block (a command's run), then as before."""
    previous = use(reporter)
    try:
        yield
    finally:
        use(previous)


@contextmanager
def task(title, total=0):
    """A unit of long work of ``total`` steps (0: unknown); yields a :class:`Task`."""
    reporter = _reporter
    if reporter is None:
        yield QUIET
        return
    if reporter.interrupt_requested():
        raise WorkInterruptedError(f"interrupted: {_lower(title)} did not start")
    handle = reporter.begin(title, total)
    try:
        yield Task(reporter, handle, title, total)
    finally:
        reporter.end(handle)


class Task:
    """Tell it how far the work is (``at(done)``); it raises WorkInterruptedError when the user asked to stop."""

    def __init__(self, reporter, handle, title, total):
        self.reporter, self.handle, self.title = reporter, handle, title
        self.stride = max(1, total // _UPDATES)
        self.next_report = 0

    def at(self, done):
        """Every call checks for an interrupt (callers call it every few milliseconds of work); about one
        in ``_UPDATES`` of the way is reported, since a report costs the debugger a redraw."""
        if self.reporter.interrupt_requested():
            raise WorkInterruptedError(f"interrupted: {_lower(self.title)} stopped; run the command again")
        if done < self.next_report:
            return
        self.next_report = done + self.stride
        self.reporter.advance(self.handle, done)


def _lower(title):
    return title[:1].lower() + title[1:]


class _Quiet:
    """The task of work nobody watches."""

    def at(self, done):
        pass


QUIET = _Quiet()
