"""The packet listing of a raw Intel PT stream (``lldb-trace packets``), like Intel's ptdump.

One walk of libipt's packet decoder produces ShownPackets (a packet, or an
error after which decoding resumes at the next PSB); the text writer prints
each as ``offset  name  field=value ...``.
"""

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from .. import libipt
from ..decode.truncation import cut_at, packet_name
from ..errors import LldbTraceError


class TruncatedStreamError(LldbTraceError):
    """The stream ends inside a packet: the file was cut short."""


class NoPsbError(LldbTraceError):
    """The stream holds no PSB packet: it is no Intel PT trace, or it was cut before its first one."""


@dataclass(frozen=True)
class ShownPacket:
    """A packet at ``offset``, or (``packet`` None) a decode error there, said in ``error``."""

    offset: int
    packet: object = None
    error: str | None = None


def shown_packets(trace: bytes) -> Iterator[ShownPacket]:
    """Every packet after the first PSB; a decode error is shown too, and decoding resumes at the next PSB.

    So corrupt streams are listed as far as they can be.  A stream that ends
    inside a packet raises TruncatedStreamError once every packet before the cut is out; one without a PSB
    raises NoPsbError: there is nothing to list.
    """
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        try:
            decoder.sync_forward()
        except libipt.LibiptError:
            raise NoPsbError(
                f"no PSB packet in its {len(trace)} bytes: it is no Intel PT trace, or it was cut before its first PSB"
            ) from None
        while True:
            offset = decoder.offset
            try:
                packet = decoder.next()
            except libipt.LibiptError as error:
                if error.code == libipt.ErrorCode.EOS:
                    if offset < len(trace):
                        raise TruncatedStreamError(
                            f"the stream ends inside {cut_at(trace, offset).describe()}: the file is truncated"
                        ) from None
                    return
                yield ShownPacket(offset, error=f"{error.text} ({error.status})")
                try:
                    decoder.sync_forward()
                except libipt.LibiptError:
                    return
                continue
            yield ShownPacket(offset, packet)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, libipt.IpCompression | libipt.ExecMode):
        return value.name.lower()
    if isinstance(value, int):
        return hex(value)
    return str(value)


def describe(packet: Any) -> str:
    """``name  field=value ...`` for one packet."""
    name = packet_name(packet.TYPE)
    if isinstance(packet, libipt.packets.Tnt8 | libipt.packets.Tnt64):
        bits = "".join("!" if taken else "." for taken in packet.taken())
        return f"{name:<8} {bits}"
    values = " ".join(f"{f.name}={_value(getattr(packet, f.name))}" for f in fields(packet) if f.name != "size")
    return f"{name:<8} {values}".rstrip()


def packet_line(shown: ShownPacket) -> str:
    """The text of one shown packet: ``offset  packet`` or ``offset  error    text``."""
    return f"{shown.offset:#010x}  " + (describe(shown.packet) if shown.error is None else f"error    {shown.error}")


def packet_lines(trace: bytes) -> Iterator[str]:
    """The listing's lines, one per shown packet (raises TruncatedStreamError after the last, for a cut stream)."""
    return map(packet_line, shown_packets(trace))
