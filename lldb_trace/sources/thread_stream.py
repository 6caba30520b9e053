"""Joining a thread's pieces of the per-cpu traces into one stream the per-thread decoder reads.

A thread's stream is its pieces concatenated in time order (executions sorted
by their first segment's time, as native LLDB sorts them).  Consecutive
segments of one execution stay together as they were written.  A piece that
starts at a PSB is copied as is.  A piece that starts at a timed enable gets a
synthetic ``PSB, [MODE.Exec], PSBEND`` in front (the last MODE.Exec seen on
that cpu; a block skipped whole counts with the one of its PSB+), and its
TIP.PGE is re-encoded with a full IP, since the IP compression of the
original referred to the last IP of whatever ran before on the cpu.  When a
thread's next piece directly follows its previous one in the same cpu's
stream, it is appended with no prefix.  Where two pieces do not continue each
other mid-flow, libipt reports the mismatch at the next PSB as a decode error
(a gap) and resynchronizes (checked: BAD_QUERY), as with lost data in a
per-thread trace.

The result keeps, per piece, the cpu, the execution and where the piece lies in
both the cpu's stream and the thread's stream, so a decoder can name the cpu
of each instruction or report an execution without trace data.
"""

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from .. import libipt
from ..libipt import IpCompression, packets
from .context_switches import Execution
from .cpu_trace_segments import PSB


@dataclass
class SegmentRun:
    """Consecutive segments of one execution on one cpu, and what was dropped before them."""

    execution: Execution
    cpu: int
    data: bytes
    segments: list  # CpuTraceSegments with a time and a place to decode from (a PSB or a TIP.PGE)
    lost_before: int


@dataclass(frozen=True)
class Piece:
    """A run of one execution's segments, as placed in a thread's stream.

    The cpu's bytes ``[cpu_offset, cpu_offset + size)`` are at ``offset`` in
    the thread's stream, after ``prefix`` bytes of synthetic PSB+ (0 when the
    piece starts at a PSB or continues the previous piece; the piece's body may
    also be a few bytes longer than ``size`` when its TIP.PGE was re-encoded).
    ``tsc`` is the time of its first segment.  ``lost_before`` counts bytes of
    this execution just before the piece that could not be decoded (no
    synchronization point): a decoder may show a gap there.
    """

    cpu: int
    execution: Execution
    cpu_offset: int
    size: int
    offset: int
    prefix: int
    tsc: int
    lost_before: int = 0

    @property
    def start(self) -> int:
        """Where the piece, its synthetic prefix included, starts in the thread's stream."""
        return self.offset - self.prefix


@dataclass(frozen=True)
class ThreadStream:
    """One thread's share of the per-cpu traces: a decodable PT stream and where it came from.

    ``data`` decodes with the ordinary per-thread decoder.  ``pieces`` say
    which cpu and execution each part of ``data`` came from, in order.
    ``executions`` lists every execution of the thread in time order, including
    those no trace data was found for.  ``dropped`` counts the thread's bytes
    that could not be decoded for lack of a synchronization point.
    """

    tid: int
    data: bytes
    pieces: tuple[Piece, ...]
    executions: tuple[Execution, ...]
    dropped: int = 0

    def __bytes__(self) -> bytes:
        return self.data

    def piece_at(self, offset: int) -> Piece | None:
        """The piece holding byte ``offset`` of ``data`` (its prefix included), or None."""
        index = bisect_right([piece.start for piece in self.pieces], offset) - 1
        return self.pieces[index] if index >= 0 else None


_SYNTHETIC: dict[str, bytes] = {}


def _psb_bytes() -> tuple[bytes, bytes]:
    if not _SYNTHETIC:
        _SYNTHETIC["psb"] = libipt.encode([packets.Psb()])
        _SYNTHETIC["psbend"] = libipt.encode([packets.Psbend()])
    return _SYNTHETIC["psb"], _SYNTHETIC["psbend"]


def _pge_bytes(ip: int) -> bytes:
    """A TIP.PGE that needs no last IP."""
    if ip >> 47 in (0, 0x1FFFF):
        return libipt.encode([packets.TipPge(IpCompression.SEXT_48, ip & 0xFFFFFFFFFFFF)])
    return libipt.encode([packets.TipPge(IpCompression.FULL, ip)])


def join_thread_stream(
    tid: int, runs: Sequence[SegmentRun], executions: Sequence[Execution], dropped: int
) -> ThreadStream:
    """Join a thread's runs in time order: executions by their first trace data, as native LLDB orders them."""
    first_tsc: dict[int, int] = {}
    for run in runs:
        key = id(run.execution)
        first_tsc[key] = min(first_tsc.get(key, run.segments[0].tsc), run.segments[0].tsc)
    order = {id(e): (first_tsc.get(id(e), e.lowest_known_tsc), e.cpu) for e in executions}
    executions = sorted(executions, key=lambda e: order[id(e)])
    runs = sorted(runs, key=lambda r: (order[id(r.execution)], r.segments[0].offset))
    out = bytearray()
    pieces = []
    previous = None  # (cpu, end offset in the cpu's stream) of the last piece
    for run in runs:
        data, first = run.data, run.segments[0]
        start, end = first.offset, run.segments[-1].end
        prefix = 0
        if previous == (run.cpu, start) or first.kind == PSB:
            body = data[start:end]
        else:
            psb, psbend = _psb_bytes()
            synthetic = psb + first.mode + psbend
            prefix = len(synthetic)
            pge_offset, pge_size, ip = first.pge
            out += synthetic
            body = data[start:pge_offset] + _pge_bytes(ip) + data[pge_offset + pge_size : end]
        pieces.append(Piece(run.cpu, run.execution, start, end - start, len(out), prefix, first.tsc, run.lost_before))
        out += body
        previous = (run.cpu, end)
    return ThreadStream(tid, bytes(out), tuple(pieces), tuple(executions), dropped)
