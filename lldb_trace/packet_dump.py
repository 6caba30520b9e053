"""A ptdump-like listing of a raw Intel PT stream, one packet per line."""

from dataclasses import fields

from . import libipt
from .decode.truncation import cut_at, packet_name
from .errors import LldbTraceError


class TruncatedStreamError(LldbTraceError):
    """The stream ends inside a packet: the file was cut short."""


def _value(value):
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, libipt.IpCompression | libipt.ExecMode):
        return value.name.lower()
    if isinstance(value, int):
        return hex(value)
    return str(value)


def describe(packet):
    """``name  field=value ...`` for one packet."""
    name = packet_name(packet.TYPE)
    if isinstance(packet, libipt.packets.Tnt8 | libipt.packets.Tnt64):
        bits = "".join("!" if taken else "." for taken in packet.taken())
        return f"{name:<8} {bits}"
    values = " ".join(f"{f.name}={_value(getattr(packet, f.name))}" for f in fields(packet) if f.name != "size")
    return f"{name:<8} {values}".rstrip()


def iter_lines(trace):
    """Lines ``offset  packet`` for every packet after the first PSB; errors resync.

    A decode error becomes an ``error`` line and decoding resumes at the next
    PSB, so corrupt streams are listed as far as they can be.  A stream that
    ends inside a packet raises TruncatedStreamError once every line is out.
    """
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        try:
            decoder.sync_forward()
        except libipt.LibiptError as error:
            yield f"{0:#010x}  error    {error.text}: no PSB in {len(trace)} bytes"
            return
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
                yield f"{offset:#010x}  error    {error.text} ({error.status})"
                try:
                    decoder.sync_forward()
                except libipt.LibiptError:
                    return
                continue
            yield f"{offset:#010x}  {describe(packet)}"
