"""One client connection: bytes in, packets answered, acks, and Ctrl-C during long work.

A reader thread turns the client's bytes into packet events while the main
thread answers them one at a time.  An interrupt byte (0x03) asks the work
in flight, or queued before it, to stop at once (through the progress
module, which every long task polls): a resume then stops with SIGINT where
it started.  Once the main thread reaches the interrupt in the queue it is
spent; one sent while nothing runs is ignored, as gdbserver ignores it.  A
client that disconnects, even mid-packet, ends the session; nothing it sends
ends the server with a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from .packets import Event, PacketReader, frame
from .replay import Replay
from .server import Server

_LOGGED = 200  # bytes of a packet or reply the log shows
MAX_RESENDS = 3  # a reply the client nacks is sent again at most this often
_END = Event("end")


def serve_connection(
    replay: Replay | Callable[[], Replay],
    receive: Callable[[], bytes],
    send: Callable[[bytes], None],
    log: TextIO | None = None,
) -> None:
    """Answer the client until it disconnects or ends the session (``k``, ``vKill``, ``D``).

    ``replay``: the Replay, or a function that makes it, called once the client's packets are being read and
    acknowledged (GDB starts ``--stdio``'s server and resends a packet it sees no ``+`` for within its 2 s
    timeout: the trace loads meanwhile).  ``receive()`` returns the next bytes (b"" at the end); ``send(data)``
    writes them all; ``log`` gets a line per packet and reply (``--log``: what a client asked, and how long each
    answer took).
    """
    events: queue.Queue[Event] = queue.Queue()
    sending = threading.Lock()
    acking = [True]  # until the client's QStartNoAckMode, which the server always accepts
    made: list[Replay] = []  # the replay, once made: an interrupt before it has nothing to stop

    def locked_send(data: bytes) -> None:
        with sending:
            send(data)

    def read() -> None:
        reader = PacketReader()
        try:
            while True:
                data = receive()
                if not data:
                    break
                for event in reader.feed(data):
                    if event.kind == "interrupt" and made:
                        made[0].interrupted = True  # seen by the work now, not after it
                    elif event.kind == "packet" and acking[0]:
                        locked_send(b"+")
                        acking[0] = event.payload != b"QStartNoAckMode"
                    elif event.kind in ("bad checksum", "too long") and acking[0]:
                        locked_send(b"-")
                    events.put(event)
        except OSError:
            pass
        if made:  # the client left: work it asked for stops, and the next client is served sooner
            made[0].interrupted = True
        events.put(_END)

    threading.Thread(target=read, name="lldb-trace serve reader", daemon=True).start()
    made.append(replay if isinstance(replay, Replay) else replay())
    _answer(Server(made[0]), events, locked_send, log)


def _answer(server: Server, events: queue.Queue[Event], send: Callable[[bytes], None], log: TextIO | None) -> None:
    """The main thread's part: each packet answered in turn, a nacked reply sent again."""
    last_reply, resends = b"", 0
    while not server.closing:
        event = events.get()
        if event is _END:
            return
        if event.kind == "interrupt":
            server.replay.interrupted = False
        elif event.kind == "nack" and not server.no_ack and last_reply and resends < MAX_RESENDS:
            send(last_reply)
            resends += 1
        elif event.kind == "too long" and server.no_ack:
            send(frame(b"E01"))
        elif event.kind == "packet":
            started = time.perf_counter()
            replies = server.answer(event.payload)
            if log is not None:
                _log(log, event.payload, replies, time.perf_counter() - started)
            for reply in replies:
                last_reply, resends = frame(reply), 0
                send(last_reply)


def _log(log: TextIO, packet: bytes, replies: list[bytes], seconds: float) -> None:
    shown = [reply[:_LOGGED] for reply in replies]
    log.write(f"{seconds * 1000:9.3f} ms  <- {packet[:_LOGGED]!r}  -> {' '.join(map(repr, shown))}\n")
    log.flush()


def serve_stdio(replay: Callable[[], Replay], log: TextIO | None = None) -> None:
    """GDB's ``target remote | lldb-trace serve --stdio PATH``: the protocol on stdin and stdout; ``replay()``
    loads the trace while the first packets are acknowledged."""
    stdin, stdout = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()

    def send(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(stdout, view) :]

    with contextlib.suppress(BrokenPipeError):
        serve_connection(replay, lambda: os.read(stdin, 65536), send, log)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket (``port`` 0: any free one); the caller says where it listens."""
    listener = socket.create_server((host, port), family=_family(host), reuse_port=False)
    listener.listen(16)  # clients beyond one are answered (turned away) at once, not left to retry
    return listener


def serve_socket(
    replay: Callable[[], Replay], listener: socket.socket, announce: Callable[[str], None], log: TextIO | None = None
) -> None:
    """Serve one client at a time on ``listener`` until interrupted (Ctrl-C in the terminal); each client gets a
    new ``replay()``: its threads at the end of their traces, no breakpoints.  A client that comes while another is
    served is turned away within _HANDOVER (its debugger says the connection closed), not left waiting unanswered
    past the 2 s GDB waits for an acknowledgement."""
    served: list[threading.Thread] = []
    choosing = threading.Lock()

    def arrive(connection, peer):  # in a thread of its own: many arriving at once wait together, not in turn
        if served:
            served[0].join(_HANDOVER)  # a client that just left: its session is ending
        with choosing:
            if served and served[0].is_alive():
                announce(f"lldb-trace serve: client {peer[0]}:{peer[1]} turned away: another client is connected")
                connection.close()
                return
            announce(f"lldb-trace serve: client {peer[0]}:{peer[1]} connected")
            session = threading.Thread(target=_serve_client, args=(replay, connection, announce, log), daemon=True)
            served[:] = [session]
            session.start()

    while True:
        threading.Thread(target=arrive, args=listener.accept(), daemon=True).start()


_HANDOVER = 1.0  # seconds a new client waits for the session of one that is leaving (its work stops at once)


def _serve_client(replay, connection, announce, log):
    with connection, contextlib.suppress(OSError):
        serve_connection(replay(), functools.partial(connection.recv, 65536), connection.sendall, log)
    announce("lldb-trace serve: client disconnected; waiting for the next one")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
