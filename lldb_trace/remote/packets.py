"""The GDB remote serial protocol's framing: ``$payload#checksum`` packets, acks and the interrupt byte.

A client's bytes are untrusted: a packet longer than ``MAX_PACKET``, a bad
checksum or junk between packets never raises here.  Each becomes an event
the connection answers (a nack, an error reply) while the stream goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PACKET = 0x4000  # the PacketSize qSupported announces; a client's packet may not be longer
INTERRUPT = 0x03
_ESCAPE = 0x7D
_SPECIAL = frozenset(b"$#}*")


@dataclass(frozen=True)
class Event:
    """What the reader found: ``kind`` is "packet" (``payload`` unescaped), "interrupt", "ack", "nack",
    "bad checksum" or "too long" (a packet that was dropped)."""

    kind: str
    payload: bytes = b""


def checksum(data: bytes | bytearray) -> int:
    return sum(data) & 0xFF


def frame(payload: bytes) -> bytes:
    """``payload`` as one packet, with ``$ # } *`` escaped (binary replies carry them)."""
    escaped = bytearray()
    for byte in payload:
        if byte in _SPECIAL:
            escaped += bytes((_ESCAPE, byte ^ 0x20))
        else:
            escaped.append(byte)
    return b"$" + bytes(escaped) + b"#" + f"{checksum(escaped):02x}".encode()


def unescape(data: bytes) -> bytes:
    """A packet's payload with ``}`` escapes undone (a trailing lone ``}`` is dropped)."""
    if b"}" not in data:
        return data
    out, pending = bytearray(), False
    for byte in data:
        if pending:
            out.append(byte ^ 0x20)
            pending = False
        elif byte == _ESCAPE:
            pending = True
        else:
            out.append(byte)
    return bytes(out)


class PacketReader:
    """Turns the client's byte stream into Events (``feed`` as bytes arrive)."""

    def __init__(self) -> None:
        self._body: bytearray | None = None  # inside a packet: its bytes so far
        self._sum: bytearray | None = None  # after its '#': the checksum digits so far
        self._too_long = False

    def feed(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        for byte in data:
            event = self._byte(byte)
            if event is not None:
                events.append(event)
        return events

    def _byte(self, byte: int) -> Event | None:
        if self._sum is not None:
            self._sum.append(byte)
            return self._finish() if len(self._sum) == 2 else None
        if self._body is not None:
            if byte == ord("#"):
                self._sum = bytearray()
            elif byte == ord("$"):  # a new packet before this one ended: the client gave up on it
                self._start()
            elif len(self._body) >= MAX_PACKET:
                self._too_long = True
            else:
                self._body.append(byte)
            return None
        if byte == ord("$"):
            self._start()
        elif byte == INTERRUPT:
            return Event("interrupt")
        elif byte == ord("+"):
            return Event("ack")
        elif byte == ord("-"):
            return Event("nack")
        return None  # junk between packets (a notification ack, line noise)

    def _start(self) -> None:
        self._body, self._sum, self._too_long = bytearray(), None, False

    def _finish(self) -> Event:
        body, digits, too_long = bytes(self._body or b""), bytes(self._sum or b""), self._too_long
        self._body = self._sum = None
        self._too_long = False
        if too_long:
            return Event("too long")
        try:
            expected = int(digits, 16)
        except ValueError:
            return Event("bad checksum")
        if expected != checksum(body):
            return Event("bad checksum")
        return Event("packet", unescape(body))


def hex_bytes(data: bytes) -> bytes:
    return data.hex().encode()


def hex_text(text: str) -> bytes:
    return hex_bytes(text.encode())
