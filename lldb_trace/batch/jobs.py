"""What runs on a worker: open a recording by its path and run one analysis on one of its threads.

A job is given plain data (the recording's path, a thread, the analysis's
options) and returns plain data (rows, counts, call columns), never a
decoded trace.  A user's error (a corrupt bundle, a range past the end of a
thread) comes back as an Outcome holding its one-line message: it would fail
the same way again, so it is not retried.  Anything else raised (storage
that went away for a moment, MemoryError) goes back to Dask, which runs the
job again.

A worker process keeps the last recording it opened, for the jobs of the
same command run that follow (a recording's thread jobs follow its listing
job): its symbols are read and its threads decoded once per process, and a
new recording is opened while the last is still held, so that the module
files they share (libc) are read once too.  The cache is per thread of the
worker (jobs running at once never share a Trace) and per command run (a
file recorded again between runs is opened again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from ..decode.workers import usable_cores
from ..errors import LldbTraceError

if TYPE_CHECKING:
    from ..api import ThreadTrace, Trace

T = TypeVar("T")


@dataclass(frozen=True)
class Source:
    """A recording as a worker opens it: its path (which every worker must see), where a perf.data's
    binaries may be besides the paths and build-id cache it names (--sysroot, --search-path), and the
    command run it is for (``run``: a token)."""

    path: str
    sysroots: tuple[str, ...] = ()
    search_paths: tuple[str, ...] = ()
    run: str = ""

    def open(self) -> Trace:
        from ..api import open_bundle
        from ..perf_data import BinarySearch

        return open_bundle(self.path, binaries=BinarySearch.default(self.sysroots, self.search_paths))


class _Kept(threading.local):
    """The last recording this thread of the worker opened."""

    source: Source | None = None
    trace: Trace | None = None

    def trace_of(self, source: Source) -> Trace:
        return self.trace if source == self.source and self.trace is not None else source.open()

    def keep(self, source: Source, trace: Trace) -> None:
        self.source, self.trace = source, trace


_kept = _Kept()


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """A job's answer: its ``value``, or the one-line ``error`` that stopped it."""

    value: T | None = None
    error: str | None = None


def traced_threads(source: Source) -> Outcome[list[tuple[int, int]]]:
    """``(pid, tid)`` of each thread of the recording that has a trace, in the recording's order."""
    try:
        trace = _kept.trace_of(source)
        _kept.keep(source, trace)
        return Outcome([(thread.pid, thread.tid) for thread in trace.threads if thread.has_trace])
    except LldbTraceError as error:
        return Outcome(error=str(error))


class ThreadGoneError(LldbTraceError):
    """A thread listed by traced_threads that the recording no longer has (the file changed)."""


def thread_of(source: Source, pid: int, tid: int) -> ThreadTrace:
    """Thread ``tid`` of process ``pid`` of the recording, opened once per worker thread and command run."""
    trace = _kept.trace_of(source)
    threads = [thread for thread in trace.threads if (thread.pid, thread.tid) == (pid, tid)]
    if not threads:
        raise ThreadGoneError(f"thread {tid} of process {pid} is no longer in the recording")
    _kept.keep(source, trace)
    return threads[0]


def on_thread(source: Source, pid: int, tid: int, analysis: Callable[[ThreadTrace], T], pieces: int) -> Outcome[T]:
    """``analysis`` of thread ``tid`` of process ``pid``; its trace is decoded in ``pieces`` cut at PSBs, in as
    many processes (the decode is the same whatever the cut: decode/parallel.py)."""
    try:
        thread = thread_of(source, pid, tid)
        thread.process_trace.workers = min(pieces, usable_cores())  # the cores of the worker's own machine
        return Outcome(analysis(thread))
    except LldbTraceError as error:
        return Outcome(error=str(error))
