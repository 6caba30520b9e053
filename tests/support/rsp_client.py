"""A small GDB remote protocol client for the tests: `lldb-trace serve --stdio` in a subprocess, packet by packet."""

import contextlib
import subprocess
import sys

from lldb_trace.remote.packets import PacketReader, frame

from .paths import ROOT


class RspClient:
    """Talks to a server process; ``ask(payload)`` returns the reply's payload (acks are handled)."""

    def __init__(self, bundle, *extra):
        command = [sys.executable, "-m", "lldb_trace.cli", "serve", "--stdio", str(bundle), *extra]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )
        self.reader = PacketReader()
        self.pending = []  # events read but not yet taken
        self.acks = []  # "ack"/"nack" events the server sent
        self.no_ack = False

    def send_raw(self, data):
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, payload):
        self.send_raw(frame(payload))

    def reply(self):
        """The next packet the server sends (its payload); None when it closed the connection."""
        while True:
            while self.pending:
                event = self.pending.pop(0)
                if event.kind in ("ack", "nack"):
                    self.acks.append(event.kind)
                elif event.kind == "packet":
                    if not self.no_ack:
                        self.send_raw(b"+")
                    return event.payload
            data = self.process.stdout.read1(65536)
            if not data:
                return None
            self.pending += self.reader.feed(data)

    def ask(self, payload):
        self.send(payload)
        return self.reply()

    def start_no_ack(self):
        assert self.ask(b"QStartNoAckMode") == b"OK"
        self.no_ack = True

    def monitor(self, command):
        """The text a ``qRcmd`` printed (its O packets), once it answered OK."""
        self.send(b"qRcmd," + command.encode().hex().encode())
        text = ""
        while True:
            reply = self.reply()
            if reply == b"OK":
                return text
            assert reply is not None and reply.startswith(b"O"), reply
            text += bytes.fromhex(reply[1:].decode()).decode()

    def close(self):
        """End the session (``k``) and return the server's exit status and stderr."""
        with contextlib.suppress(BrokenPipeError):  # the server may end between the poll and the write or close
            if self.process.poll() is None:
                self.send(b"k")
            self.process.stdin.close()
        status = self.process.wait(timeout=60)
        return status, self.process.stderr.read().decode()
