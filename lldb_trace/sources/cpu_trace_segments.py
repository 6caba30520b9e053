"""Cutting one cpu's Intel PT stream into segments: stretches with a known time, where decoding may start.

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

Only the PSB blocks whose time span (from their TSC to the next PSB's) holds
an execution boundary are read packet by packet; the others lie inside one
execution and stay whole, so most of a large trace is skipped from PSB to PSB
at libipt's speed.
"""

import ctypes
import itertools
import struct
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .. import libipt
from ..libipt import IpCompression, LibiptError, PacketType
from ..libipt.structs import pt_packet
from .context_switches import Execution

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
class CpuTraceSegment:
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
    def size(self) -> int:
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


def scan_segments(
    data: bytes, cpu: libipt.Cpu | None = None, boundaries: Sequence[int] | None = None
) -> list[CpuTraceSegment]:
    """Cut one cpu's PT stream into segments (see the module docstring); ``cpu`` is a libipt.Cpu or None.

    Finding TSC packets between PSBs means reading every packet, which costs
    about a microsecond each in Python.  With ``boundaries`` (the sorted start
    and end times of the cpu's executions), only the PSB blocks whose time span
    holds a boundary are read packet by packet; any other block lies inside
    one execution and stays whole.  Without it, every block is read.
    """
    if not data:
        return []
    segments: list[CpuTraceSegment] = []
    with _Scanner(data, cpu) as scanner:
        headers = scanner.psb_headers()
        if not headers:
            return [CpuTraceSegment(0, HEAD, None, end=len(data))]
        if headers[0][0]:
            segments.append(CpuTraceSegment(0, HEAD, None, end=headers[0][0]))
        mode = b""
        for index, (offset, tsc, psb_mode) in enumerate(headers):
            following = headers[index + 1] if index + 1 < len(headers) else None
            end = following[0] if following else len(data)
            until = following[1] if following and following[1] is not None else _U64_MAX
            if boundaries is None or tsc is None or _crosses(boundaries, tsc, until):
                block, mode = scanner.scan_block(offset, end, mode)
                segments += block
            else:
                segments.append(CpuTraceSegment(offset, PSB, tsc, end=end, mode=mode))
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
        headers: list[tuple[int, int | None, bytes]] = []
        decoder = self.decoder
        while True:
            try:
                decoder.sync_forward()
            except LibiptError:
                return headers
            offset = decoder.offset
            tsc, mode, at = None, b"", offset
            for _ in range(_PSB_PLUS_LIMIT):
                item = self._next()
                if item is None:
                    break
                kind, size = item
                if kind == _TSC and tsc is None:
                    tsc = _U64_UNPACK(bytes(self.packet.payload))[0]
                elif kind == _MODE:
                    mode = self._mode_exec(at, size) or mode
                elif kind == _PSBEND or (kind not in _PSB_PLUS and at > offset):
                    break
                at += size
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
                current = CpuTraceSegment(offset, PSB, None, mode=mode)
                segments.append(current)
                in_psb, last_ip, candidate = True, 0, None
            elif kind == _TSC:
                tsc = _U64_UNPACK(bytes(payload))[0]
                if in_psb:
                    if current is not None and current.tsc is None:  # (in a PSB+, current is its segment)
                        current.tsc = tsc
                else:
                    current = candidate = CpuTraceSegment(offset, TIMED, tsc, mode=mode)
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
            return [CpuTraceSegment(start, PSB, None, end=end, mode=mode)], mode
        for segment, following in itertools.pairwise(segments):
            segment.end = following.offset
        segments[-1].end = end
        return segments, mode


def timed_segments(segments: Iterable[CpuTraceSegment]) -> list[CpuTraceSegment]:
    """Segments with a time: a PSB segment without one joins the segment before it."""
    timed: list[CpuTraceSegment] = []
    for segment in segments:
        if segment.tsc is None and timed and segment.kind != HEAD:
            timed[-1].end = segment.end
        else:
            timed.append(segment)
    return timed
