"""Intel PT packets as Python values, converted to and from ``struct pt_packet``.

One small frozen dataclass per packet type, made from its payload's layout:
the fields of libipt's payload union at the byte offsets GCC gives them on
x86-64, with the bits of each bit-field.  That one table gives the class its
attributes and both conversions, done with ``struct``, so no ctypes
bit-field layout is relied upon.
"""

import struct
from dataclasses import MISSING, dataclass, field, make_dataclass
from typing import NamedTuple

from .enums import ExecMode, IpCompression, ModeLeaf, PacketType
from .structs import pt_packet

_PAYLOAD_SIZE = 16


class PayloadField(NamedTuple):
    """A field of the payload: a ``code`` (struct's B, H, I or Q) at byte ``offset``, or of it only ``width``
    bits from ``bit`` (a one-bit field is a bool).  ``values`` turns the number into the attribute's value:
    an enum, or a dict from each value to its number.  A field without a name always holds ``default``."""

    name: str
    code: str
    offset: int
    bit: int | None = None
    width: int = 1
    values: object = None
    default: object = MISSING

    @property
    def kind(self):
        """The attribute's type."""
        if isinstance(self.values, dict):
            return type(next(iter(self.values)))
        return self.values or (bool if self.bit is not None and self.width == 1 else int)

    def read(self, payload):
        number = struct.unpack_from(f"<{self.code}", payload, self.offset)[0]
        if self.bit is not None:
            number = number >> self.bit & (1 << self.width) - 1
        if isinstance(self.values, dict):
            return next(value for value, coded in self.values.items() if coded == number)
        return self.kind(number)

    def write(self, payload, value):
        number = self.values[value] if isinstance(self.values, dict) else int(value)
        if self.bit is not None:  # bit-fields share their unit: add to what is there
            number = struct.unpack_from(f"<{self.code}", payload, self.offset)[0] | number << self.bit
        struct.pack_into(f"<{self.code}", payload, self.offset, number)


class Packet:
    """Base of all packets.  ``size`` is the encoded length, known after decoding."""

    TYPE = PacketType.INVALID
    LAYOUT = ()  # the PayloadFields of the packet's payload

    def to_c(self):
        c = pt_packet()
        c.type = int(self.TYPE)
        c.size = self.size
        payload = bytearray(_PAYLOAD_SIZE)
        for part in self.LAYOUT:
            part.write(payload, getattr(self, part.name) if part.name else part.default)
        c.payload[:] = payload
        return c

    @classmethod
    def from_payload(cls, payload, size):
        return cls(**{part.name: part.read(payload) for part in cls.LAYOUT if part.name}, size=size)


class _TntPacket(Packet):
    """TNT: the oldest branch is the highest of the ``bit_size`` payload bits."""

    @classmethod
    def from_taken(cls, taken):
        """Build from branch outcomes, oldest first."""
        bits = 0
        for outcome in taken:
            bits = bits << 1 | bool(outcome)
        return cls(bit_size=len(taken), payload=bits)

    def taken(self):
        """Branch outcomes, oldest first."""
        return [bool(self.payload >> i & 1) for i in range(self.bit_size - 1, -1, -1)]


_BY_TYPE = {}


def _packet(name, packet_type, *layout, base=Packet):
    """The packet class ``name``: its attributes are the named fields of ``layout``, then ``size``."""
    attributes = [(part.name, part.kind, field(default=part.default)) for part in layout if part.name] + [
        ("size", int, field(default=0, compare=False))
    ]
    namespace = {"TYPE": packet_type, "LAYOUT": layout, "__module__": __name__}
    cls = make_dataclass(name, attributes, bases=(base,), namespace=namespace, frozen=True)
    _BY_TYPE.setdefault(packet_type, cls)  # MODE: ModeExec, unless the leaf says TSX (from_c)
    return cls


def _flag(name, code, offset, bit):
    return PayloadField(name, code, offset, bit=bit, default=False)


_IP = (PayloadField("ipc", "I", 0, values=IpCompression), PayloadField("ip", "Q", 8))  # struct pt_packet_ip
_TNT = (PayloadField("bit_size", "B", 0), PayloadField("payload", "Q", 8))  # struct pt_packet_tnt
_LEAF = PayloadField("", "I", 0)  # struct pt_packet_mode: enum pt_mode_leaf, then the leaf's bit-fields at 4
_EXEC_BITS = {ExecMode.BIT64: 0b01, ExecMode.BIT32: 0b10, ExecMode.BIT16: 0b00, ExecMode.UNKNOWN: 0b11}  # csl, csd

# Packets without payload.
Pad = _packet("Pad", PacketType.PAD)
Psb = _packet("Psb", PacketType.PSB)
Psbend = _packet("Psbend", PacketType.PSBEND)
Ovf = _packet("Ovf", PacketType.OVF)
Stop = _packet("Stop", PacketType.STOP)
# Control flow.
Fup = _packet("Fup", PacketType.FUP, *_IP)
Tip = _packet("Tip", PacketType.TIP, *_IP)
TipPge = _packet("TipPge", PacketType.TIP_PGE, *_IP)
TipPgd = _packet("TipPgd", PacketType.TIP_PGD, *_IP)
Tnt8 = _packet("Tnt8", PacketType.TNT_8, *_TNT, base=_TntPacket)
Tnt64 = _packet("Tnt64", PacketType.TNT_64, *_TNT, base=_TntPacket)
ModeExec = _packet(
    "ModeExec", PacketType.MODE, PayloadField("", "I", 0, default=ModeLeaf.EXEC),
    PayloadField("mode", "I", 4, bit=0, width=2, values=_EXEC_BITS),
)  # fmt: skip
ModeTsx = _packet(
    "ModeTsx", PacketType.MODE, PayloadField("", "I", 0, default=ModeLeaf.TSX),
    PayloadField("intx", "I", 4, bit=0), PayloadField("abrt", "I", 4, bit=1),
)  # fmt: skip
# Timing.
Tsc = _packet("Tsc", PacketType.TSC, PayloadField("tsc", "Q", 0))
Cbr = _packet("Cbr", PacketType.CBR, PayloadField("ratio", "B", 0))
Tma = _packet("Tma", PacketType.TMA, PayloadField("ctc", "H", 0), PayloadField("fc", "H", 2))
Mtc = _packet("Mtc", PacketType.MTC, PayloadField("ctc", "B", 0))
Cyc = _packet("Cyc", PacketType.CYC, PayloadField("value", "Q", 0))
# Paging, virtualization and maintenance.
Pip = _packet("Pip", PacketType.PIP, PayloadField("cr3", "Q", 0), _flag("nr", "I", 8, 0))
Vmcs = _packet("Vmcs", PacketType.VMCS, PayloadField("base", "Q", 0))
Mnt = _packet("Mnt", PacketType.MNT, PayloadField("payload", "Q", 0))
# Power events and PTWRITE.
Exstop = _packet("Exstop", PacketType.EXSTOP, _flag("ip", "I", 0, 0))
Mwait = _packet("Mwait", PacketType.MWAIT, PayloadField("hints", "I", 0), PayloadField("ext", "I", 4))
Pwre = _packet(
    "Pwre", PacketType.PWRE, PayloadField("state", "B", 0), PayloadField("sub_state", "B", 1), _flag("hw", "B", 2, 0)
)
Pwrx = _packet(
    "Pwrx", PacketType.PWRX, PayloadField("last", "B", 0), PayloadField("deepest", "B", 1),
    _flag("interrupt", "B", 2, 0), _flag("store", "B", 2, 1), _flag("autonomous", "B", 2, 2),
)  # fmt: skip
Ptw = _packet(
    "Ptw", PacketType.PTW, PayloadField("payload", "Q", 0), PayloadField("plc", "B", 8), _flag("ip", "B", 9, 0)
)


@dataclass(frozen=True)
class Unknown(Packet):
    """A packet libipt could not classify (only ever decoded, never encoded)."""

    raw_type: int = PacketType.UNKNOWN
    size: int = field(default=0, compare=False)


def from_c(c):
    """Convert a decoded ``pt_packet`` to its Python packet."""
    cls = _BY_TYPE.get(c.type)
    if cls is None:
        return Unknown(raw_type=c.type, size=c.size)
    payload = bytes(c.payload)
    if cls is ModeExec and _LEAF.read(payload) == ModeLeaf.TSX:
        cls = ModeTsx
    return cls.from_payload(payload, c.size)
