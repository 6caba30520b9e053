"""Intel PT packets as Python values, converted to and from ``struct pt_packet``.

One small frozen dataclass per packet type.  The payload union is packed with
``struct`` at the byte offsets GCC gives it on x86-64 (bit-fields included), so
no ctypes bit-field layout is relied upon.
"""

import struct
from dataclasses import dataclass, field

from .enums import ExecMode, IpCompression, ModeLeaf, PacketType
from .structs import pt_packet

_BY_TYPE = {}


def _packet(cls):
    cls = dataclass(frozen=True)(cls)
    _BY_TYPE[cls.TYPE] = cls
    return cls


class Packet:
    """Base of all packets.  ``size`` is the encoded length, known after decoding."""

    TYPE = PacketType.INVALID

    def _pack(self):
        return b""

    @classmethod
    def _unpack(cls, payload, size):
        return cls(size=size)

    def to_c(self):
        c = pt_packet()
        c.type = int(self.TYPE)
        c.size = self.size
        data = self._pack()
        c.payload[: len(data)] = data
        return c


def from_c(c):
    """Convert a decoded ``pt_packet`` to its Python packet."""
    cls = _BY_TYPE.get(c.type, Unknown)
    payload = bytes(c.payload)
    if cls is Unknown:
        return Unknown(raw_type=c.type, size=c.size)
    if cls is ModeExec:
        leaf = struct.unpack_from("<I", payload)[0]
        if leaf == ModeLeaf.TSX:
            return ModeTsx._unpack(payload, c.size)
    return cls._unpack(payload, c.size)


def _bit(word, index):
    return bool(word >> index & 1)


# Packets without payload.


@_packet
class Pad(Packet):
    TYPE = PacketType.PAD
    size: int = field(default=0, compare=False)


@_packet
class Psb(Packet):
    TYPE = PacketType.PSB
    size: int = field(default=0, compare=False)


@_packet
class Psbend(Packet):
    TYPE = PacketType.PSBEND
    size: int = field(default=0, compare=False)


@_packet
class Ovf(Packet):
    TYPE = PacketType.OVF
    size: int = field(default=0, compare=False)


@_packet
class Stop(Packet):
    TYPE = PacketType.STOP
    size: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Unknown(Packet):
    """A packet libipt could not classify (only ever decoded, never encoded)."""

    raw_type: int = PacketType.UNKNOWN
    size: int = field(default=0, compare=False)


# IP packets: struct pt_packet_ip { enum ipc; uint64_t ip; }.


class _IpPacket(Packet):
    def _pack(self):
        return struct.pack("<I4xQ", int(self.ipc), self.ip)

    @classmethod
    def _unpack(cls, payload, size):
        ipc, ip = struct.unpack_from("<I4xQ", payload)
        return cls(ipc=IpCompression(ipc), ip=ip, size=size)


@_packet
class Fup(_IpPacket):
    TYPE = PacketType.FUP
    ipc: IpCompression
    ip: int
    size: int = field(default=0, compare=False)


@_packet
class Tip(_IpPacket):
    TYPE = PacketType.TIP
    ipc: IpCompression
    ip: int
    size: int = field(default=0, compare=False)


@_packet
class TipPge(_IpPacket):
    TYPE = PacketType.TIP_PGE
    ipc: IpCompression
    ip: int
    size: int = field(default=0, compare=False)


@_packet
class TipPgd(_IpPacket):
    TYPE = PacketType.TIP_PGD
    ipc: IpCompression
    ip: int
    size: int = field(default=0, compare=False)


# TNT: struct pt_packet_tnt { uint8_t bit_size; uint64_t payload; }.
# The oldest branch is the highest of the bit_size payload bits.


class _TntPacket(Packet):
    def _pack(self):
        return struct.pack("<B7xQ", self.bit_size, self.payload)

    @classmethod
    def _unpack(cls, payload, size):
        bit_size, bits = struct.unpack_from("<B7xQ", payload)
        return cls(bit_size=bit_size, payload=bits, size=size)

    @classmethod
    def from_taken(cls, taken):
        """Build from branch outcomes, oldest first."""
        bits = 0
        for outcome in taken:
            bits = bits << 1 | bool(outcome)
        return cls(bit_size=len(taken), payload=bits)

    def taken(self):
        """Branch outcomes, oldest first."""
        return [_bit(self.payload, i) for i in range(self.bit_size - 1, -1, -1)]


@_packet
class Tnt8(_TntPacket):
    TYPE = PacketType.TNT_8
    bit_size: int
    payload: int
    size: int = field(default=0, compare=False)


@_packet
class Tnt64(_TntPacket):
    TYPE = PacketType.TNT_64
    bit_size: int
    payload: int
    size: int = field(default=0, compare=False)


# MODE: struct pt_packet_mode { enum leaf; union { exec; tsx } bits; }.


@_packet
class ModeExec(Packet):
    TYPE = PacketType.MODE
    mode: ExecMode
    size: int = field(default=0, compare=False)

    _BITS = {ExecMode.BIT64: 0b01, ExecMode.BIT32: 0b10, ExecMode.BIT16: 0b00, ExecMode.UNKNOWN: 0b11}

    def _pack(self):
        return struct.pack("<II", ModeLeaf.EXEC, self._BITS[self.mode])

    @classmethod
    def _unpack(cls, payload, size):
        bits = struct.unpack_from("<I", payload, 4)[0] & 0b11
        mode = {v: k for k, v in cls._BITS.items()}[bits]
        return cls(mode=mode, size=size)


@dataclass(frozen=True)
class ModeTsx(Packet):
    TYPE = PacketType.MODE
    intx: bool
    abrt: bool
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<II", ModeLeaf.TSX, self.intx | self.abrt << 1)

    @classmethod
    def _unpack(cls, payload, size):
        bits = struct.unpack_from("<I", payload, 4)[0]
        return cls(intx=_bit(bits, 0), abrt=_bit(bits, 1), size=size)


# Timing packets.


@_packet
class Tsc(Packet):
    TYPE = PacketType.TSC
    tsc: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<Q", self.tsc)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(tsc=struct.unpack_from("<Q", payload)[0], size=size)


@_packet
class Cbr(Packet):
    TYPE = PacketType.CBR
    ratio: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<B", self.ratio)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(ratio=payload[0], size=size)


@_packet
class Tma(Packet):
    TYPE = PacketType.TMA
    ctc: int
    fc: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<HH", self.ctc, self.fc)

    @classmethod
    def _unpack(cls, payload, size):
        ctc, fc = struct.unpack_from("<HH", payload)
        return cls(ctc=ctc, fc=fc, size=size)


@_packet
class Mtc(Packet):
    TYPE = PacketType.MTC
    ctc: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<B", self.ctc)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(ctc=payload[0], size=size)


@_packet
class Cyc(Packet):
    TYPE = PacketType.CYC
    value: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<Q", self.value)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(value=struct.unpack_from("<Q", payload)[0], size=size)


# Paging, virtualization and maintenance.


@_packet
class Pip(Packet):
    TYPE = PacketType.PIP
    cr3: int
    nr: bool = False
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<QI", self.cr3, self.nr)

    @classmethod
    def _unpack(cls, payload, size):
        cr3, bits = struct.unpack_from("<QI", payload)
        return cls(cr3=cr3, nr=_bit(bits, 0), size=size)


class _U64Packet(Packet):
    """Packets whose payload is a single uint64_t named by FIELD."""

    def _pack(self):
        return struct.pack("<Q", getattr(self, self.FIELD))

    @classmethod
    def _unpack(cls, payload, size):
        return cls(struct.unpack_from("<Q", payload)[0], size=size)


@_packet
class Vmcs(_U64Packet):
    TYPE = PacketType.VMCS
    FIELD = "base"
    base: int
    size: int = field(default=0, compare=False)


@_packet
class Mnt(_U64Packet):
    TYPE = PacketType.MNT
    FIELD = "payload"
    payload: int
    size: int = field(default=0, compare=False)


# Power events and PTWRITE.


@_packet
class Exstop(Packet):
    TYPE = PacketType.EXSTOP
    ip: bool = False
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<I", self.ip)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(ip=_bit(payload[0], 0), size=size)


@_packet
class Mwait(Packet):
    TYPE = PacketType.MWAIT
    hints: int
    ext: int
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<II", self.hints, self.ext)

    @classmethod
    def _unpack(cls, payload, size):
        hints, ext = struct.unpack_from("<II", payload)
        return cls(hints=hints, ext=ext, size=size)


@_packet
class Pwre(Packet):
    TYPE = PacketType.PWRE
    state: int
    sub_state: int
    hw: bool = False
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<BBB", self.state, self.sub_state, self.hw)

    @classmethod
    def _unpack(cls, payload, size):
        return cls(state=payload[0], sub_state=payload[1], hw=_bit(payload[2], 0), size=size)


@_packet
class Pwrx(Packet):
    TYPE = PacketType.PWRX
    last: int
    deepest: int
    interrupt: bool = False
    store: bool = False
    autonomous: bool = False
    size: int = field(default=0, compare=False)

    def _pack(self):
        flags = self.interrupt | self.store << 1 | self.autonomous << 2
        return struct.pack("<BBB", self.last, self.deepest, flags)

    @classmethod
    def _unpack(cls, payload, size):
        flags = payload[2]
        return cls(
            last=payload[0],
            deepest=payload[1],
            interrupt=_bit(flags, 0),
            store=_bit(flags, 1),
            autonomous=_bit(flags, 2),
            size=size,
        )


@_packet
class Ptw(Packet):
    TYPE = PacketType.PTW
    payload: int
    plc: int
    ip: bool = False
    size: int = field(default=0, compare=False)

    def _pack(self):
        return struct.pack("<QBB", self.payload, self.plc, self.ip)

    @classmethod
    def _unpack(cls, payload, size):
        value, plc, flags = struct.unpack_from("<QBB", payload)
        return cls(payload=value, plc=plc, ip=_bit(flags, 0), size=size)
