"""One huge thread's trace decoded in pieces across the cluster's workers, then joined and analysed here.

A thread whose trace holds at least ``--split-above`` MB is cut at PSBs into
one piece per worker, the cut a single process makes for its forked decoders
(decode/parallel.py).  Each worker decodes its piece, builds its call forest
(decode/piece_forest.py) and sends both back as raw columns
(decode/part_transfer.py); this process joins them as a single process joins
its own pieces, so the decode and the forest are the same, and runs the
thread's analysis on them: what the commands print needs the whole thread's
call stacks.  The cluster does the decoding and builds the forest, which are
most of the work; this machine needs the memory of one decoded thread and
its call forest.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..decode.part_transfer import read_part, write_part
from ..errors import LldbTraceError
from .engine import Progress, run_jobs
from .jobs import Outcome, Source, thread_of

Job = tuple[int, int, int | None]  # a piece: trace bytes start..end, and the ip the next piece resumes at


def planned_pieces(source: Source, pid: int, tid: int, pieces: int, least_bytes: int) -> Outcome[list[Job] | None]:
    """The thread's pieces when its trace has at least ``least_bytes`` and can be cut, else None (on a worker)."""
    try:
        thread = thread_of(source, pid, tid)
        trace = thread.process_trace.trace_bytes(tid)
        if trace is None or len(trace) < least_bytes:
            return Outcome(None)
        jobs = thread.process_trace.piece_jobs(tid, pieces)
        return Outcome(jobs if jobs and len(jobs) > 1 else None)
    except LldbTraceError as error:
        return Outcome(error=str(error))


def decoded_piece(source: Source, pid: int, tid: int, job: Job) -> Outcome[bytes]:
    """One piece of the thread's trace, decoded with its call forest, as part_transfer's bytes (on a worker)."""
    try:
        part = thread_of(source, pid, tid).process_trace.decoded_piece(tid, job, for_forest=True)
    except LldbTraceError as error:
        return Outcome(error=str(error))
    out = io.BytesIO()
    write_part(part, out)
    return Outcome(out.getvalue())


def analysed_here(
    client: Any,
    source: Source,
    pid: int,
    tid: int,
    jobs: Sequence[Job],
    analysis: Callable,
    label: str,
    progress: Progress,
) -> Outcome:
    """``analysis`` of the thread, its pieces decoded on the cluster; an Outcome with the error of a piece that
    failed (after Dask's retries) or of the analysis."""
    started = time.perf_counter()
    labels = [f"{label}, trace bytes {start}..{end}" for start, end, _next in jobs]
    pieces = [(source, pid, tid, job) for job in jobs]
    values, failures = run_jobs(client, decoded_piece, pieces, labels, progress, keep_going=True)
    if failures:
        return Outcome(error=f"{failures[0].what}: {failures[0].error}")
    try:
        thread = thread_of(source, pid, tid)
        parts = [read_part(value) for value in values]
        thread.process_trace.adopt_pieces(tid, parts, time.perf_counter() - started)
        del parts, values
        return Outcome(analysis(thread))
    except LldbTraceError as error:
        return Outcome(error=str(error))
