"""A ctypes binding of libipt 2.x, the Intel Processor Trace decoder library.

Plain Python, no ``lldb`` import.  Everything libipt offers is here: the
encoder, the packet, query, block and instruction decoders, events, images and
the image section cache.  Failures raise :class:`LibiptError` (libipt's text
and its negative status); a missing or wrong library raises
:class:`LibiptUnavailableError` with the package to install.
"""

from . import packets
from .config import Config, Cpu, Timing, cpu_errata, errata_names
from .decoders import (
    Block,
    BlockDecoder,
    Encoder,
    Insn,
    InsnDecoder,
    PacketDecoder,
    QueryDecoder,
    encode,
)
from .enums import (
    CpuVendor,
    ErrorCode,
    EventType,
    ExecMode,
    InsnClass,
    IpCompression,
    ModeLeaf,
    PacketType,
    StatusFlag,
)
from .error import LibiptError, check, errstr
from .events import Event
from .image import Image, SectionCache, make_asid
from .native import LibiptUnavailableError, library_version

__all__ = [
    "Block",
    "BlockDecoder",
    "Config",
    "Cpu",
    "CpuVendor",
    "Encoder",
    "ErrorCode",
    "Event",
    "EventType",
    "ExecMode",
    "Image",
    "Insn",
    "InsnClass",
    "InsnDecoder",
    "IpCompression",
    "LibiptError",
    "LibiptUnavailableError",
    "ModeLeaf",
    "PacketDecoder",
    "PacketType",
    "QueryDecoder",
    "SectionCache",
    "StatusFlag",
    "Timing",
    "check",
    "cpu_errata",
    "encode",
    "errata_names",
    "errstr",
    "library_version",
    "make_asid",
    "packets",
]
