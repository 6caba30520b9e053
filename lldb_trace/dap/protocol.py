"""DAP's wire format: JSON messages framed by a ``Content-Length`` header, read and written with limits.

A client is trusted to speak the protocol, not to speak it well.  A header
that is not ASCII ``Name: value``, a missing or bad ``Content-Length``, a
length past MAX_BODY or more header than MAX_HEADER_BYTES leave no message
boundary to resynchronise on: they raise FramingError, and the connection
ends.  A body that is not a JSON object keeps the framing intact: it raises
MalformedMessageError, and the caller answers it and reads on.  Nothing here
imports ``lldb``.
"""

import json

MAX_HEADER_BYTES = 8192  # all the header lines of one message together
MAX_BODY = 16 * 1024 * 1024  # a DAP message is a few KiB; this bounds what a bad length makes the server hold
_LENGTH = b"content-length"


class FramingError(Exception):
    """The stream cannot go on: no message boundary can be found (the connection ends)."""


class MalformedMessageError(Exception):
    """A well-framed body that is not a JSON object (the connection goes on)."""


def read_message(stream):
    """The next message (a dict) from a binary ``stream``; None at a clean end of input.

    FramingError when the header is broken or the input ends inside a message;
    MalformedMessageError when the body is not a JSON object.
    """
    length = _read_header(stream)
    if length is None:
        return None
    body = _read_exactly(stream, length)
    try:
        message = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise MalformedMessageError(f"the body is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError; so is an integer too long
        raise MalformedMessageError(f"the body is not JSON: {_first_line(error)}") from None
    if not isinstance(message, dict):
        raise MalformedMessageError(f"the body is a JSON {type(message).__name__}, not an object")
    return message


def _read_header(stream):
    """The Content-Length of the next message; None at a clean end before its first byte."""
    length, used, first = None, 0, True
    while True:
        line = stream.readline(MAX_HEADER_BYTES - used + 1)
        if not line:
            if first:
                return None
            raise FramingError("the client closed the connection in the middle of a message header")
        first = False
        used += len(line)
        if used > MAX_HEADER_BYTES:
            raise FramingError(f"a message header is longer than {MAX_HEADER_BYTES} bytes")
        if not line.endswith(b"\n"):
            raise FramingError("the client closed the connection in the middle of a message header")
        text = line.rstrip(b"\r\n")
        if not text:
            if length is None:
                raise FramingError("a message header has no Content-Length")
            return length
        name, colon, value = text.partition(b":")
        if not colon or not name or not _printable_ascii(text):
            raise FramingError(f"a message header line is not 'Name: value': {_shown(text)}")
        if name.strip().lower() == _LENGTH:
            length = _length(value.strip())


def _length(value):
    if not value.isdigit():
        raise FramingError(f"Content-Length must be a byte count, not {_shown(value)}")
    if len(value) > 12 or int(value) > MAX_BODY:
        raise FramingError(f"Content-Length {_shown(value)} is over the limit of {MAX_BODY} bytes")
    return int(value)


def _read_exactly(stream, length):
    chunks, left = [], length
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise FramingError(
                f"the client closed the connection in the middle of a message ({length - left} of {length} bytes)"
            )
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def encode(message):
    """A message as the bytes to send: the header, then the body (ASCII JSON: any string survives)."""
    body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _printable_ascii(text):
    return all(32 <= byte < 127 or byte == 9 for byte in text)


def _shown(text):
    """Bytes from the client as one short line of text (a quoted prefix)."""
    shown = repr(bytes(text[:60]))[1:]
    return shown + ("..." if len(text) > 60 else "")


def _first_line(error):
    return str(error).splitlines()[0] if str(error) else type(error).__name__
