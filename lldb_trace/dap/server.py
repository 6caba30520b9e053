"""``lldb-trace dap``'s loop: messages read on a thread of their own, requests answered in order.

Reading apart from answering lets a ``cancel`` or ``pause`` reach a request
still at work: it asks LLDB to interrupt, as Ctrl-C does inside LLDB, and
the plugin's long work (decoding, solving values, a search over a long
history) stops with a one-line error; SIGINT does the same.  The protocol
owns the process's stdin and stdout: they are moved to private descriptors
first, and stdout then points at stderr, so nothing LLDB or the plugin prints
can corrupt a message (and nothing can read the client's bytes).
"""

import os
import queue
import signal
import threading

from ..errors import LldbTraceError
from . import protocol


class ClientGoneError(Exception):
    """The client stopped reading: there is nobody left to answer."""


class Server:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self._write_lock = threading.Lock()
        self._seq = 0
        self._inbox = queue.Queue()
        self._state_lock = threading.Lock()
        self._working = None  # the seq of the request being answered
        self.session = None

    def serve(self):
        """Answer until the client disconnects; a FramingError's message, or None after a clean end.

        The session (LLDB and the plugin, most of a second to start) is made for the first request, so a
        stream broken from its first byte is told so at once."""
        threading.Thread(target=self._read, name="dap-reader", daemon=True).start()
        try:
            while self.session is None or not self.session.ended:
                kind, item = self._inbox.get()
                if kind == "end":
                    return None
                if kind == "fatal":
                    output = f"lldb-trace dap: {item}: closing the connection\n"
                    self.send({"type": "event", "event": "output", "body": {"category": "important", "output": output}})
                    return item
                if kind == "malformed":
                    message = f"malformed message: {item}"
                    self.send(
                        {"type": "response", "request_seq": 0, "command": "", "success": False, "message": message}
                    )
                else:
                    self._answer(item)
            return None
        except ClientGoneError:
            return None
        finally:
            if self.session is not None:
                self.session.close()

    def _answer(self, message):
        if self.session is None:
            from .session import Session  # LLDB and the plugin: imported when a request needs them

            self.session = Session(self.send)
        with self._state_lock:
            self._working = message.get("seq")
        try:
            self.session.handle(message)
        finally:
            with self._state_lock:
                self._working = None
                debugger = self.session.debugger
                while debugger.InterruptRequested():  # an interrupt that came too late is no one's
                    debugger.CancelInterruptRequest()

    def interrupt(self, message=None):
        """Stop the request at work, if ``message`` (a cancel or pause; None: Ctrl-C) asks for it."""
        with self._state_lock:
            if self._working is None or self.session is None:
                return
            if message is not None and message.get("command") == "cancel":
                arguments = message.get("arguments")
                arguments = arguments if isinstance(arguments, dict) else {}
                if arguments.get("requestId") != self._working and arguments.get("progressId") is None:
                    return
            self.session.debugger.RequestInterrupt()

    def send(self, message):
        """Write one message (any thread); its ``seq`` is given here, in the order messages go out."""
        with self._write_lock:
            self._seq += 1
            data = protocol.encode({"seq": self._seq, **message})
            try:
                self.writer.write(data)
                self.writer.flush()
            except (OSError, ValueError):  # a closed pipe (or file): the client went away
                raise ClientGoneError() from None

    def _read(self):
        while True:
            try:
                message = protocol.read_message(self.reader)
            except protocol.MalformedMessageError as error:
                self._inbox.put(("malformed", str(error)))
                continue
            except protocol.FramingError as error:
                self._inbox.put(("fatal", str(error)))
                return
            except (OSError, ValueError) as error:
                self._inbox.put(("fatal", f"cannot read from the client: {error}"))
                return
            if message is None:
                self._inbox.put(("end", None))
                return
            if message.get("type") == "request" and message.get("command") in ("cancel", "pause"):
                self.interrupt(message)
            self._inbox.put(("message", message))


def serve_stdio():
    """Serve DAP on this process's stdin and stdout; a broken stream raises LldbTraceError (exit status 1)."""
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    stray = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stray, 0)  # nothing else reads the client's bytes
    os.dup2(2, 1)  # what LLDB or the plugin prints goes to stderr, never into a message
    os.close(stray)
    server = Server(reader, writer)
    previous = signal.signal(signal.SIGINT, lambda _signal, _frame: server.interrupt())
    try:
        problem = server.serve()
    finally:
        signal.signal(signal.SIGINT, previous)
    if problem is not None:
        raise LldbTraceError(problem)
