"""Splitting per-cpu Intel PT traces among threads, with the cpus' context switch traces.

A per-cpu bundle has one PT stream per cpu, holding whatever ran there, and one
context switch trace per cpu saying which thread ran when
(:mod:`.context_switches`).  :func:`thread_streams` cuts each cpu's stream into
pieces, gives each piece to the thread that was running when it was written,
and joins each thread's pieces, in time order, into one PT byte stream that the
ordinary per-thread decoder (``decode_thread_trace``) decodes like a per-thread trace.

How a cpu's stream is cut
-------------------------

A decoder can only start at a synchronization point, and a piece can only be
given to a thread if we know when it was written.  The stream is cut into
*segments* at:

- every PSB: a synchronization point; its time is the TSC packet inside its
  PSB+ (a PSB+ without one gives no time: the segment joins the one before);
- every TSC packet outside a PSB+: a time boundary.  The Intel SDM guarantees
  that packets before a TSC packet describe earlier execution, and packets
  after it later execution.  When the TSC is followed (only timing, MODE,
  PIP, VMCS or PAD packets between) by a TIP.PGE, tracing (re)starts there
  with a known IP, and the segment is a synchronization point too (an
  "enable" segment); otherwise it is a "timed" segment that can only continue
  the segment before it.

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

Only the PSB blocks whose time span (from their TSC to the next PSB's) holds
an execution boundary are read packet by packet; the others lie inside one
execution and stay whole, so most of a large trace is skipped from PSB to PSB
at libipt's speed.

Making the pieces decodable
---------------------------

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

import ctypes
import itertools
import struct
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from .. import libipt
from ..errors import LldbTraceError
from ..libipt import IpCompression, LibiptError, PacketType, packets
from ..libipt.structs import pt_packet
from .context_switches import Execution, read_context_switches


class PerCpuTraceError(LldbTraceError):
    """A per-cpu bundle cannot be split among its threads."""


# Packets that may sit between a TSC packet and the TIP.PGE it times: timing,
# paging, mode and padding packets, none of which needs an enabled flow.
_NEUTRAL = frozenset(
    int(kind)
    for kind in (
        PacketType.PAD,
        PacketType.MODE,
        PacketType.TMA,
        PacketType.MTC,
        PacketType.CYC,
        PacketType.CBR,
        PacketType.PIP,
        PacketType.VMCS,
        PacketType.MNT,
    )
)
_IP_PACKETS = frozenset(int(k) for k in (PacketType.FUP, PacketType.TIP, PacketType.TIP_PGE, PacketType.TIP_PGD))
_PSB, _PSBEND, _TSC, _MODE, _PGE = (
    int(PacketType.PSB),
    int(PacketType.PSBEND),
    int(PacketType.TSC),
    int(PacketType.MODE),
    int(PacketType.TIP_PGE),
)
_IP_UNPACK = struct.Struct("<I4xQ").unpack_from
_U64_UNPACK = struct.Struct("<Q").unpack_from
_MODE_EXEC_LEAF = 0
_U64_MAX = (1 << 64) - 1
# What a PSB+ may hold (reading a PSB+ stops at anything else, at PSBEND, or after _PSB_PLUS_LIMIT packets).
_PSB_PLUS = (
    frozenset(
        int(kind)
        for kind in (PacketType.PSB, PacketType.TSC, PacketType.MODE, PacketType.FUP, PacketType.PIP, PacketType.VMCS)
    )
    | _NEUTRAL
)
_PSB_PLUS_LIMIT = 32

HEAD, PSB, ENABLE, TIMED = "head", "psb", "enable", "timed"
SYNC_KINDS = (PSB, ENABLE)


@dataclass
class Segment:
    """Bytes ``[offset, end)`` of a cpu's stream, cut as the module docstring explains.

    ``kind`` is ``"head"`` (bytes before the first PSB), ``"psb"``, ``"enable"``
    or ``"timed"``; ``tsc`` is its time (None if unknown).  An enable segment
    has ``pge``: the offset and size of its TIP.PGE and the full IP it enables
    tracing at.  ``mode`` is the raw MODE.Exec packet in force when the segment
    starts (empty if none was seen yet).
    """

    offset: int
    kind: str
    tsc: int | None
    end: int = 0
    pge: tuple[int, int, int] | None = None
    mode: bytes = b""
    owner: Execution | None = field(default=None, compare=False)

    @property
    def size(self):
        return self.end - self.offset


def _full_ip(ipc, payload, last_ip):
    """The IP an IP packet stands for, given the last IP (Intel SDM IP compression)."""
    if ipc == IpCompression.UPDATE_16:
        return (last_ip & ~0xFFFF) | payload
    if ipc == IpCompression.UPDATE_32:
        return (last_ip & ~0xFFFFFFFF) | payload
    if ipc == IpCompression.SEXT_48:
        return payload | (0xFFFF << 48) if payload >> 47 & 1 else payload
    if ipc == IpCompression.UPDATE_48:
        return (last_ip & ~0xFFFFFFFFFFFF) | payload
    return payload  # FULL


def _crosses(boundaries, low, high):
    """True when a time in ``boundaries`` (sorted) lies in ``[low, high]``."""
    index = bisect_left(boundaries, low)
    return index < len(boundaries) and boundaries[index] <= high


def scan_segments(data, cpu=None, boundaries=None):
    """Cut one cpu's PT stream into segments (see the module docstring); ``cpu`` is a libipt.Cpu or None.

    Finding TSC packets between PSBs means reading every packet, which costs
    about a microsecond each in Python.  With ``boundaries`` (the sorted start
    and end times of the cpu's executions), only the PSB blocks whose time span
    holds a boundary are read packet by packet; any other block lies inside
    one execution and stays whole.  Without it, every block is read.
    """
    if not data:
        return []
    segments = []
    with _Scanner(data, cpu) as scanner:
        headers = scanner.psb_headers()
        if not headers:
            return [Segment(0, HEAD, None, end=len(data))]
        if headers[0][0]:
            segments.append(Segment(0, HEAD, None, end=headers[0][0]))
        mode = b""
        for index, (offset, tsc, psb_mode) in enumerate(headers):
            following = headers[index + 1] if index + 1 < len(headers) else None
            end = following[0] if following else len(data)
            until = following[1] if following and following[1] is not None else _U64_MAX
            if boundaries is None or tsc is None or _crosses(boundaries, tsc, until):
                block, mode = scanner.scan_block(offset, end, mode)
                segments += block
            else:
                segments.append(Segment(offset, PSB, tsc, end=end, mode=mode))
                mode = psb_mode or mode
    return segments


class _Scanner:
    """Reads a cpu's stream with libipt's packet decoder, as fast as Python allows."""

    def __init__(self, data, cpu):
        self.data = data
        self.decoder = libipt.PacketDecoder(libipt.Config(bytes(data), cpu))
        self.next_packet, self.handle = self.decoder._fn["next"], self.decoder.handle
        self.packet = pt_packet()
        self.packet_ref, self.packet_size = ctypes.byref(self.packet), ctypes.sizeof(self.packet)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.decoder.close()

    def _next(self):
        """``(kind, size)`` of the next packet, or None at the end or at a packet libipt cannot read."""
        status = self.next_packet(self.handle, self.packet_ref, self.packet_size)
        return None if status < 0 else (self.packet.type, self.packet.size)

    def _mode_exec(self, offset, size):
        """The raw packet if the MODE packet at ``offset`` is a MODE.Exec, else None."""
        return bytes(self.data[offset : offset + size]) if self.packet.payload[0] == _MODE_EXEC_LEAF else None

    def psb_headers(self):
        """``(offset, tsc, mode)`` of every PSB: the TSC and raw MODE.Exec of its PSB+ (None, b"" if absent)."""
        headers = []
        decoder = self.decoder
        while True:
            try:
                decoder.sync_forward()
            except LibiptError:
                return headers
            offset = decoder.offset
            tsc, mode, position = None, b"", offset
            for _ in range(_PSB_PLUS_LIMIT):
                item = self._next()
                if item is None:
                    break
                kind, size = item
                if kind == _TSC and tsc is None:
                    tsc = _U64_UNPACK(bytes(self.packet.payload))[0]
                elif kind == _MODE:
                    mode = self._mode_exec(position, size) or mode
                elif kind == _PSBEND or (kind not in _PSB_PLUS and position > offset):
                    break
                position += size
            headers.append((offset, tsc, mode))

    def scan_block(self, start, end, mode):
        """Segments of the PSB block ``[start, end)``; returns them and the MODE.Exec in force at its end."""
        self.decoder.sync_set(start)
        payload = self.packet.payload
        offset, in_psb, last_ip = start, False, 0
        candidate = current = None  # candidate: a timed segment a TIP.PGE may still make an enable segment
        segments = []
        while offset < end:
            item = self._next()
            if item is None:
                break  # the end, or an unreadable packet: the rest of the block stays in the current segment
            kind, size = item
            if kind == _PSB:
                current = Segment(offset, PSB, None, mode=mode)
                segments.append(current)
                in_psb, last_ip, candidate = True, 0, None
            elif kind == _TSC:
                tsc = _U64_UNPACK(bytes(payload))[0]
                if in_psb:
                    if current.tsc is None:
                        current.tsc = tsc
                else:
                    current = candidate = Segment(offset, TIMED, tsc, mode=mode)
                    segments.append(current)
            elif kind == _PSBEND:
                in_psb = False
            elif kind in _IP_PACKETS:
                ipc, ip = _IP_UNPACK(bytes(payload))
                if ipc != IpCompression.SUPPRESSED:
                    last_ip = _full_ip(ipc, ip, last_ip)
                    if kind == _PGE and candidate is not None:
                        candidate.kind = ENABLE
                        candidate.pge = (offset, size, last_ip)
                candidate = None
            elif kind == _MODE:
                mode = self._mode_exec(offset, size) or mode
            elif kind not in _NEUTRAL:
                candidate = None
            offset += size
        if not segments:  # the PSB itself could not be read
            return [Segment(start, PSB, None, end=end, mode=mode)], mode
        for segment, following in itertools.pairwise(segments):
            segment.end = following.offset
        segments[-1].end = end
        return segments, mode


def _timed_segments(segments):
    """Segments with a time: a PSB segment without one joins the segment before it."""
    timed = []
    for segment in segments:
        if segment.tsc is None and timed and segment.kind != HEAD:
            timed[-1].end = segment.end
        else:
            timed.append(segment)
    return timed


def attribute(segments, executions):
    """Set each segment's ``owner`` to the execution that ran when it was written (or None)."""
    index = 0
    for execution in executions:
        while index < len(segments) and (segments[index].tsc is None or segments[index].tsc < execution.end_tsc):
            segment = segments[index]
            segment.owner = execution if segment.tsc is not None and segment.tsc > execution.start_tsc else None
            index += 1
    for segment in segments[index:]:
        segment.owner = None


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
    def start(self):
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

    def __bytes__(self):
        return self.data

    def piece_at(self, offset):
        """The piece holding byte ``offset`` of ``data`` (its prefix included), or None."""
        index = bisect_right([piece.start for piece in self.pieces], offset) - 1
        return self.pieces[index] if index >= 0 else None


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
    """The result of :func:`split_bundle`: a stream per thread, and a summary per cpu."""

    threads: dict  # tid -> ThreadStream
    cpus: tuple[CpuSplit, ...]


_SYNTHETIC = {}


def _psb_bytes():
    if not _SYNTHETIC:
        _SYNTHETIC["psb"] = libipt.encode([packets.Psb()])
        _SYNTHETIC["psbend"] = libipt.encode([packets.Psbend()])
    return _SYNTHETIC["psb"], _SYNTHETIC["psbend"]


def _pge_bytes(ip):
    """A TIP.PGE that needs no last IP."""
    if ip >> 47 in (0, 0x1FFFF):
        return libipt.encode([packets.TipPge(IpCompression.SEXT_48, ip & 0xFFFFFFFFFFFF)])
    return libipt.encode([packets.TipPge(IpCompression.FULL, ip)])


def _libipt_cpu(bundle):
    cpu = bundle.cpu
    return libipt.Cpu(cpu.family, cpu.model, cpu.stepping) if cpu.vendor == "intel" else None


def _all_tids(bundle):
    return [thread.tid for process in bundle.processes for thread in process.threads]


@dataclass
class _Run:
    """Consecutive segments of one execution on one cpu, and what was dropped before them."""

    execution: Execution
    cpu: int
    data: bytes
    segments: list
    lost_before: int


def split_bundle(bundle, tids=None):
    """Share the per-cpu traces of ``bundle`` among threads ``tids`` (default: every thread of the bundle).

    Returns a :class:`PerCpuSplit`: ``threads`` maps every asked tid to its
    :class:`ThreadStream` (with no data when it never ran while traced);
    ``cpus`` says how each cpu's trace was shared.  Threads are matched by tid
    alone, as native LLDB does.  Raises :class:`PerCpuTraceError` for a bundle
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
    cpu = _libipt_cpu(bundle)
    runs = {tid: [] for tid in wanted}
    executions = {tid: [] for tid in wanted}
    lost_by_tid = dict.fromkeys(wanted, 0)
    cpu_splits = []
    for cpu_trace in sorted(bundle.cpus, key=lambda c: c.cpu_id):
        switches = read_context_switches(cpu_trace.context_switches, cpu_trace.cpu_id, bundle.tsc_conversion)
        data = cpu_trace.trace.read_bytes()
        boundaries = sorted({t for e in switches.executions for t in (e.start_tsc, e.end_tsc)})
        segments = _timed_segments(scan_segments(data, cpu, boundaries))
        if data and all(s.tsc is None for s in segments):
            raise PerCpuTraceError(
                f"{cpu_trace.trace}: cpu {cpu_trace.cpu_id}'s trace has no TSC packets: a per-cpu trace can only be "
                "split among threads with timestamps (trace with TSC enabled)"
            )
        attribute(segments, switches.executions)
        owned = {}
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
                    runs[execution.tid].append(_Run(execution, cpu_trace.cpu_id, data, run, lost))
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
    threads = {tid: _thread_stream(tid, runs[tid], executions[tid], lost_by_tid[tid]) for tid in sorted(wanted)}
    return PerCpuSplit(threads=threads, cpus=tuple(cpu_splits))


def thread_streams(bundle, tids=None):
    """``{tid: ThreadStream}`` for ``tids`` (default: every thread of the bundle); see :func:`split_bundle`."""
    return split_bundle(bundle, tids).threads


def _contiguous_runs(segments):
    runs = []
    for segment in segments:
        if runs and runs[-1][-1].end == segment.offset:
            runs[-1].append(segment)
        else:
            runs.append([segment])
    return runs


def _thread_stream(tid, runs, executions, dropped):
    """Join a thread's runs in time order: executions by their first trace data, as native LLDB orders them."""
    first_tsc = {}
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
