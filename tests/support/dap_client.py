"""A DAP client for the tests: it starts ``lldb-trace dap`` and talks to it message by message over stdio.

A thread reads every message the server sends into a queue; ``request``
sends one request and returns its response, keeping the events that came
before it, and ``event`` waits for the next event of a name.  Timeouts are
hang guards only (a server that stops answering fails the test, it never
waits forever); nothing waits for time to pass.
"""

import contextlib
import json
import queue
import subprocess
import sys
import threading

from .paths import ROOT

HANG_GUARD = 120  # seconds: far more than any answer takes, even on a busy CI machine


class ServerGoneError(AssertionError):
    """The server closed its output (or stopped answering) while an answer was awaited."""


def dap_command(python=sys.executable):
    """The command line that serves DAP with ``python`` (its lldb_trace and lldb)."""
    return [python, "-c", "import sys; from lldb_trace.dap import main; sys.exit(main([]))"]


class DapClient:
    def __init__(self, command=None, env=None):
        self.process = subprocess.Popen(
            command or dap_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ROOT, env=env,
        )  # fmt: skip
        self.messages = queue.Queue()
        self.events = []  # events received and not yet taken by event()
        self.seq = 0
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # -- sending ------------------------------------------------------------------------------------

    def send_bytes(self, data):
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message):
        body = json.dumps(message).encode()
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, command, arguments=None, **extra):
        """Send a request; its response (events before it are kept for event())."""
        self.seq += 1
        message = {"seq": self.seq, "type": "request", "command": command, **extra}
        if arguments is not None:
            message["arguments"] = arguments
        self.send(message)
        return self.response(self.seq)

    def response(self, request_seq):
        while True:
            message = self._next()
            if message.get("type") == "response" and message.get("request_seq") == request_seq:
                return message
            if message.get("type") == "event":
                self.events.append(message)

    def ok(self, command, arguments=None):
        """The body of a successful response (the test fails with the server's message otherwise)."""
        response = self.request(command, arguments)
        assert response["success"], f"{command} failed: {response.get('message')}"
        return response.get("body", {})

    def error(self, command, arguments=None):
        """The message of an error response (the test fails if the request succeeds)."""
        response = self.request(command, arguments)
        assert not response["success"], f"{command} succeeded: {response.get('body')}"
        assert "Traceback" not in response["message"]
        return response["message"]

    # -- receiving ----------------------------------------------------------------------------------

    def event(self, name):
        """The next event called ``name`` (earlier events of other names stay kept)."""
        while True:
            for k, message in enumerate(self.events):
                if message["event"] == name:
                    return self.events.pop(k)["body"] if "body" in message else {}
            message = self._next()
            if message.get("type") == "event":
                self.events.append(message)

    def take_events(self, name):
        """The bodies of the events called ``name`` received so far (and forgotten)."""
        taken = [message for message in self.events if message["event"] == name]
        self.events = [message for message in self.events if message["event"] != name]
        return [message.get("body", {}) for message in taken]

    def _next(self):
        try:
            message = self.messages.get(timeout=HANG_GUARD)
        except queue.Empty:
            raise ServerGoneError(f"no message from the server in {HANG_GUARD} s") from None
        if message is None:
            raise ServerGoneError(f"the server closed its output; its stderr: {self.stderr.decode(errors='replace')}")
        return message

    def _read(self):
        stream = self.process.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    self.messages.put(None)
                    return
                header += byte
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            self.messages.put(json.loads(stream.read(length)))

    def _drain_stderr(self):
        for line in self.process.stderr:
            self.stderr += line

    # -- the session --------------------------------------------------------------------------------

    def start(self, trace, **launch):
        """initialize, launch, configurationDone: the first ``stopped`` event's body."""
        capabilities = self.ok("initialize", {"adapterID": "lldb-trace", "linesStartAt1": True})
        assert capabilities["supportsStepBack"]
        self.ok("launch", {"trace": str(trace), **launch})
        self.event("initialized")
        self.ok("configurationDone")
        return self.event("stopped")

    def close(self):
        """Disconnect and wait for the server to exit; its exit status."""
        if self.process.poll() is None:
            with contextlib.suppress(ServerGoneError, BrokenPipeError, OSError):
                self.request("disconnect")
        return self.finish()

    def finish(self):
        """Close the server's input and wait for it to exit; its exit status."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        return self.process.wait(timeout=HANG_GUARD)
