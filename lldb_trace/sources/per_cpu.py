"""Splitting per-cpu Intel PT traces among threads, with the cpus' context switch traces.

A per-cpu bundle has one PT stream per cpu, holding whatever ran there, and one
context switch trace per cpu saying which thread ran when
(:mod:`.context_switches`).  :func:`thread_streams` cuts each cpu's stream into
pieces, gives each piece to the thread that was running when it was written,
and joins each thread's pieces, in time order, into one PT byte stream that the
ordinary per-thread decoder (``decode_thread_trace``) decodes like a per-thread trace.

One module a step: :mod:`.cpu_trace_segments` cuts each cpu's stream into
timed segments, this module gives each segment to the thread that was running
when it was written, and :mod:`.thread_stream` joins each thread's segments
into a stream it can decode.

Which thread a segment goes to
------------------------------

Each segment goes to the execution (thread, cpu, time window) whose window
strictly contains the segment's time: native LLDB's rule for PSBs, applied to
finer segments.  Executions are visited in the order the context switch
trace gives them, each taking the not yet visited segments that are earlier
than its end, so overlapping hinted windows resolve as in native LLDB.

A PSB segment that spans a context switch
-----------------------------------------

Native LLDB (lldb-22) gives a whole PSB block (PSB to next PSB) to the thread
running at the PSB's time.  While decoding it, it stops at the first event
whose TSC reaches the end of that thread's execution ("decoding truncated:
TSC ... exceeds maximum TSC value"), and drops the rest of the block; it
never gives that rest to the thread that ran next (its source calls that
future work).  Here the block is cut at every TSC packet inside it instead:
the part after a TSC packet later than the thread's switch out no longer
goes to that thread, and goes to the thread running at that time when it
starts with a timed enable (TSC ... TIP.PGE), which that thread then decodes
from its first instruction.  A part that cannot be synchronized on (no PSB,
no timed enable) is dropped and counted (``CpuSplit.dropped_bytes``,
``ThreadStream.dropped``, ``Piece.lost_before``): that thread's decoding
starts at its next synchronization point, as in native LLDB.  Without a TSC
packet inside the block (hardware writes TSC packets in PSB+ and when tracing
or its clocks restart, not at every context switch) the whole block stays
with the thread running at the PSB, as in native LLDB: the switch cannot be
located in it without finer timing (MTC/CYC), which the bundle does not
describe.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..decode.decoder_cpu import decoder_cpu
from ..errors import LldbTraceError
from .context_switches import U64_MAX, parse_context_switches, read_context_switches
from .cpu_trace_segments import HEAD, SYNC_KINDS, scan_segments, timed_segments
from .thread_stream import Piece, SegmentRun, ThreadStream, join_thread_stream

if TYPE_CHECKING:
    from ..bundle.model import Bundle
    from ..perf_data.aux_streams import Break
    from .context_switches import Execution
    from .cpu_trace_segments import CpuTraceSegment


class PerCpuTraceError(LldbTraceError):
    """A per-cpu bundle cannot be split among its threads."""


def attribute(segments: list[CpuTraceSegment], executions: Sequence[Execution]) -> None:
    """Set each segment's ``owner`` to the execution that ran when it was written (or None)."""
    index = 0
    for execution in executions:
        while index < len(segments) and ((tsc := segments[index].tsc) is None or tsc < execution.end_tsc):
            segments[index].owner = execution if tsc is not None and tsc > execution.start_tsc else None
            index += 1
    for segment in segments[index:]:
        segment.owner = None


@dataclass(frozen=True)
class CpuSplit:
    """How one cpu's trace was shared out."""

    cpu: int
    trace_size: int
    segments: int
    attributed_segments: int  # segments written during an execution (of any task)
    unattributed_bytes: int  # written while no asked-for thread ran (other processes, idle), or untimed
    dropped_bytes: int  # of an asked-for thread, but with no synchronization point to decode from
    executions: int
    loss_records: int
    ignored_tail: int


@dataclass(frozen=True)
class PerCpuSplit:
    """The result of :func:`split_bundle`: a stream per thread, and a summary per cpu.

    ``breaks`` are, per thread, where its stream does not continue because its cpu's trace was lost there
    (a perf.data's breaks, see :func:`thread_breaks`), with offsets in the thread's stream.
    """

    threads: dict[int, ThreadStream]
    cpus: tuple[CpuSplit, ...]
    breaks: dict[int, tuple[Break, ...]]  # in stream order


@dataclass(frozen=True)
class CpuLoss:
    """A break in a cpu's trace (``lost``, at ``lost.offset`` of the cpu's stream) and when it happened: after
    the data timed ``since`` and before the data timed ``until`` (0 and 2**64-1 where no data says)."""

    cpu: int
    lost: Break
    since: int
    until: int


def _all_tids(bundle: Bundle) -> list[int]:
    return [thread.tid for process in bundle.processes for thread in process.threads]


def split_bundle(bundle: Bundle, tids: Iterable[int] | None = None) -> PerCpuSplit:
    """Share the per-cpu traces of ``bundle`` among threads ``tids`` (default: every thread of the bundle).

    Returns a :class:`PerCpuSplit`: ``threads`` maps every asked tid to its
    :class:`~.thread_stream.ThreadStream` (with no data when it never ran
    while traced); ``cpus`` says how each cpu's trace was shared.  Threads are
    matched by tid alone, as native LLDB does.  Raises :class:`PerCpuTraceError` for a bundle
    without cpus or without ``tscPerfZeroConversion``, or a cpu trace without
    any TSC, and ContextSwitchTraceError for a damaged context switch trace.
    """
    if not bundle.cpus:
        raise PerCpuTraceError(f"{bundle.path}: the bundle has no per-cpu traces ('cpus')")
    if bundle.tsc_conversion is None:
        raise PerCpuTraceError(
            f"{bundle.path}: a bundle with per-cpu traces needs 'tscPerfZeroConversion' to read its context switches"
        )
    wanted = set(_all_tids(bundle) if tids is None else tids)
    cpu = decoder_cpu(bundle.cpu)
    runs: dict[int, list[SegmentRun]] = {tid: [] for tid in wanted}
    executions: dict[int, list[Execution]] = {tid: [] for tid in wanted}
    lost_by_tid = dict.fromkeys(wanted, 0)
    cpu_splits, losses = [], []
    for cpu_trace in sorted(bundle.cpus, key=lambda c: c.cpu_id):
        if cpu_trace.switch_data is not None:
            source = f"{cpu_trace.context_switches} (context switch records)"
            switches = parse_context_switches(cpu_trace.switch_data, cpu_trace.cpu_id, bundle.tsc_conversion, source)
        else:
            switches = read_context_switches(cpu_trace.context_switches, cpu_trace.cpu_id, bundle.tsc_conversion)
        data = cpu_trace.read_trace()
        boundaries = sorted({t for e in switches.executions for t in (e.start_tsc, e.end_tsc)})
        segments = timed_segments(scan_segments(data, cpu, boundaries))
        if data and all(s.kind == HEAD for s in segments):
            raise PerCpuTraceError(
                f"{cpu_trace.trace}: cpu {cpu_trace.cpu_id}'s trace holds no PSB packet, where decoding starts, in "
                f"its {len(data)} bytes: none of it can be decoded; is it the raw Intel PT trace?"
            )
        if data and all(s.tsc is None for s in segments):
            raise PerCpuTraceError(
                f"{cpu_trace.trace}: cpu {cpu_trace.cpu_id}'s trace has no TSC packets: a per-cpu trace can only be "
                "split among threads with timestamps (trace with TSC enabled)"
            )
        attribute(segments, switches.executions)
        losses += cpu_losses(cpu_trace.cpu_id, segments, cpu_trace.breaks)
        owned: dict[int, list[CpuTraceSegment]] = {}
        for segment in segments:
            if segment.owner is not None and segment.owner.tid in wanted:
                owned.setdefault(id(segment.owner), []).append(segment)
        dropped = 0
        for execution in switches.executions:
            if execution.tid not in wanted:
                continue
            executions[execution.tid].append(execution)
            for run in _contiguous_runs(owned.get(id(execution), [])):
                lost = 0
                while run and run[0].kind not in SYNC_KINDS:
                    lost += run.pop(0).size
                dropped += lost
                lost_by_tid[execution.tid] += lost
                if run:
                    runs[execution.tid].append(SegmentRun(execution, cpu_trace.cpu_id, data, run, lost))
        cpu_splits.append(
            CpuSplit(
                cpu=cpu_trace.cpu_id,
                trace_size=len(data),
                segments=len(segments),
                attributed_segments=sum(1 for s in segments if s.owner is not None),
                unattributed_bytes=sum(s.size for s in segments if s.owner is None or s.owner.tid not in wanted),
                dropped_bytes=dropped,
                executions=len(switches.executions),
                loss_records=switches.loss_records,
                ignored_tail=switches.ignored_tail,
            )
        )
    threads = {tid: join_thread_stream(tid, runs[tid], executions[tid], lost_by_tid[tid]) for tid in sorted(wanted)}
    breaks = {tid: thread_breaks(stream, losses) for tid, stream in threads.items()}
    return PerCpuSplit(threads=threads, cpus=tuple(cpu_splits), breaks=breaks)


def cpu_losses(cpu: int, segments: list[CpuTraceSegment], breaks: Iterable[Break]) -> list[CpuLoss]:
    """The CpuLoss of each break of one cpu's stream, timed by the segments around it."""
    offsets = [segment.offset for segment in segments]
    losses = []
    for lost in breaks:
        k = bisect_left(offsets, lost.offset)
        before = segments[k - 1].tsc if k else None
        after = segments[k].tsc if k < len(segments) else None
        losses.append(CpuLoss(cpu, lost, 0 if before is None else before, U64_MAX if after is None else after))
    return losses


def thread_breaks(stream: ThreadStream, losses: Iterable[CpuLoss]) -> tuple[Break, ...]:
    """Where a thread's stream breaks because a cpu lost trace data that was, or may have been, its own.

    A loss inside one of its pieces breaks the stream there.  Otherwise each of its executions on that cpu
    that overlaps the loss in time breaks the stream where the pieces after that execution's start (and
    after the loss's) begin, or at its end: the thread's history misses what it ran there.
    """
    pieces: dict[int, list[Piece]] = {}
    for piece in sorted(stream.pieces, key=lambda p: p.cpu_offset):
        pieces.setdefault(piece.cpu, []).append(piece)
    offsets = {cpu: [piece.cpu_offset for piece in found] for cpu, found in pieces.items()}
    ran: dict[int, list[Execution]] = {}
    for execution in sorted(stream.executions, key=lambda e: e.start_tsc):
        ran.setdefault(execution.cpu, []).append(execution)
    starts = {cpu: [e.start_tsc for e in found] for cpu, found in ran.items()}
    times = [piece.tsc for piece in stream.pieces]
    found: dict[int, Break] = {}
    for loss in losses:
        at = _inside(pieces.get(loss.cpu, ()), offsets.get(loss.cpu, ()), loss.lost.offset)
        places = [at] if at is not None else []
        k = bisect_left(starts.get(loss.cpu, ()), loss.until) - 1
        while at is None and k >= 0 and ran[loss.cpu][k].end_tsc > loss.since:  # its executions during the loss
            after = bisect_right(times, max(ran[loss.cpu][k].start_tsc, loss.since))
            places.append(stream.pieces[after].start if after < len(stream.pieces) else len(stream.data))
            k -= 1
        for place in places:
            found.setdefault(place, replace(loss.lost, offset=place))
    return tuple(found[at] for at in sorted(found))


def _inside(pieces: Sequence[Piece], offsets: Sequence[int], offset: int) -> int | None:
    """Where cpu stream byte ``offset`` is in the thread's stream, when one of ``pieces`` (sorted by their
    ``offsets`` in the cpu's stream) holds it; else None."""
    k = bisect_right(offsets, offset) - 1
    if k < 0 or offset >= pieces[k].cpu_offset + pieces[k].size:
        return None
    piece = pieces[k]
    return piece.start if offset == piece.cpu_offset else piece.offset + offset - piece.cpu_offset


def thread_streams(bundle: Bundle, tids: Iterable[int] | None = None) -> dict[int, ThreadStream]:
    """``{tid: ThreadStream}`` for ``tids`` (default: every thread of the bundle); see :func:`split_bundle`."""
    return split_bundle(bundle, tids).threads


def _contiguous_runs(segments: list[CpuTraceSegment]) -> list[list[CpuTraceSegment]]:
    runs: list[list[CpuTraceSegment]] = []
    for segment in segments:
        if runs and runs[-1][-1].end == segment.offset:
            runs[-1].append(segment)
        else:
            runs.append([segment])
    return runs
