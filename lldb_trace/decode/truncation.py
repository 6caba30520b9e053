"""Telling a trace file that was cut short from one that simply ends.

libipt reports the end of a stream the same way whether the last packet is
complete or not (``pte_eos``).  A stream whose last packet is incomplete was
cut (a copy truncated, a file partly written); one that ends at a packet
boundary cannot be told from a snapshot's end.  :func:`find_cut` steps over
the packets from the last PSB to the end by their sizes, read from their
opcodes (Intel SDM, "Intel PT packets"; the tests check every size against
libipt), and names the packet the end falls inside: libipt does not decode
a packet it cannot read whole.
"""

import re
from dataclasses import dataclass, replace

from .. import libipt
from ..libipt import LibiptError, PacketType
from ..libipt.psb import PSB

_IP_PACKETS = {0x0D: PacketType.TIP, 0x11: PacketType.TIP_PGE, 0x01: PacketType.TIP_PGD, 0x1D: PacketType.FUP}
_IP_BYTES = {0: 0, 1: 2, 2: 4, 3: 6, 4: 6, 6: 8}  # by IP compression (the header's top 3 bits)
_WHOLE_BYTE = {0x99: (PacketType.MODE, 2), 0x19: (PacketType.TSC, 8), 0x59: (PacketType.MTC, 2)}
_EXTENDED = {  # second byte after 0x02
    0x82: (PacketType.PSB, 16),
    0x23: (PacketType.PSBEND, 2),
    0xF3: (PacketType.OVF, 2),
    0xA3: (PacketType.TNT_64, 8),
    0x03: (PacketType.CBR, 4),
    0x43: (PacketType.PIP, 8),
    0x73: (PacketType.TMA, 7),
    0xC8: (PacketType.VMCS, 7),
    0x83: (PacketType.STOP, 2),
    0xC3: (PacketType.MNT, 11),
    0x62: (PacketType.EXSTOP, 2),
    0xE2: (PacketType.EXSTOP, 2),
    0xC2: (PacketType.MWAIT, 10),
    0x22: (PacketType.PWRE, 4),
    0xA2: (PacketType.PWRX, 7),
}
_ONE_BYTE_PACKETS = re.compile(b"[" + re.escape(bytes(range(0, 256, 2)).replace(b"\x02", b"")) + b"]*")  # PAD, TNT-8
# Packets that a branch at the end of a straight-line run consumes: a cut one still proves the run ran.
_FLOW_PACKETS = frozenset({PacketType.TIP, PacketType.TIP_PGD, PacketType.TNT_64})


def packet_name(packet_type):
    """The name ``lldb-trace packets`` lists a packet type by (``tip.pge``, ``tnt.64``...)."""
    return packet_type.name.lower().replace("_", ".")


def packet_header(data):
    """``(PacketType or None, size or None)`` of the packet that ``data`` starts with, from its opcode alone."""
    first = data[0]
    if first in _WHOLE_BYTE:
        return _WHOLE_BYTE[first]
    if (first & 0x1F) in _IP_PACKETS:
        return _IP_PACKETS[first & 0x1F], (1 + _IP_BYTES[first >> 5] if first >> 5 in _IP_BYTES else None)
    if (first & 0x03) == 0x03:
        return PacketType.CYC, None  # its length is in the bytes that follow
    if first == 0x02:
        if len(data) < 2:
            return None, None
        second = data[1]
        if (second & 0x1F) == 0x12:
            return PacketType.PTW, 2 + (8 if second & 0x20 else 4)
        return _EXTENDED.get(second, (None, None))
    return (PacketType.PAD, 1) if first == 0 else (PacketType.TNT_8, 1) if not first & 1 else (None, None)


@dataclass(frozen=True)
class Cut:
    """Where a stream ends inside a packet: its offset, what it is (if known), its bytes present and its size."""

    offset: int
    packet: PacketType | None
    present: int
    size: int | None

    @property
    def proves_run(self):
        """Whether the cut packet is one the decoder's last straight-line run was waiting for."""
        return self.packet in _FLOW_PACKETS

    def describe(self):
        """``a tip packet at offset 0xc6 (2 of its 5 bytes)``."""
        what = f"a {packet_name(self.packet)} packet" if self.packet is not None else "a packet"
        of = f" of its {self.size} bytes" if self.size else (" byte" if self.present == 1 else " bytes")
        return f"{what} at offset {self.offset:#x} ({self.present}{of})"

    def to_json(self):
        """The cut as ``trace dump --json`` shows it."""
        packet = packet_name(self.packet) if self.packet is not None else None
        return {"offset": self.offset, "packet": packet, "bytesPresent": self.present, "packetSize": self.size}


def cut_at(trace, offset):
    """The Cut of a packet starting at ``offset`` that runs past the end of ``trace``."""
    packet, size = packet_header(trace[offset:])
    return Cut(offset, packet, len(trace) - offset, size)


def find_cut(trace):
    """The Cut if ``trace`` ends inside a packet; None if it ends at a packet boundary, or if it cannot be told.

    It cannot be told without a PSB to start from (libipt finds the last
    one), or past a packet of no known size (a corrupt stream).  The packets
    after that PSB are stepped over by their sizes, runs of one-byte packets
    (PAD, TNT-8) at a time, so a long run of padding costs no Python per byte.
    """
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        try:
            decoder.sync_backward()
        except LibiptError:
            return None
        offset = decoder.sync_offset
    end = len(trace)
    while True:
        offset = _ONE_BYTE_PACKETS.match(trace, offset).end()
        if offset >= end:
            return None
        packet, size = packet_header(trace[offset : offset + 2])
        if packet is None:  # an extended opcode without its second byte, or no packet at all
            return cut_at(trace, offset) if offset + 1 == end and trace[offset] == 0x02 else None
        if packet == PacketType.CYC:
            size = _cyc_size(trace, offset)
        if size is None:
            return None
        if offset + size > end:
            return cut_at(trace, offset)
        offset += size


def _cyc_size(trace, offset):
    """A CYC packet's length: its first byte's bit 2, then each next byte's bit 0, says another byte follows."""
    if not trace[offset] & 0x04:
        return 1
    end = offset + 1
    while end < len(trace) and trace[end] & 0x01:
        end += 1
    return end - offset + 1


def find_file_cut(path, window=1 << 16):
    """:func:`find_cut` of the trace file at ``path``, reading only its tail from the last PSB on.

    None as well when the file cannot be read any more (decoding it will say why).
    """
    try:
        with open(path, "rb") as trace:
            size = trace.seek(0, 2)
            while True:
                start = max(0, size - window)
                trace.seek(start)
                tail = trace.read()
                if start == 0 or PSB in tail:
                    cut = find_cut(tail)
                    return cut and replace(cut, offset=start + cut.offset)
                window *= 16
    except OSError:
        return None
