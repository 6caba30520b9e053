"""Long work shown in the client: LLDB's progress events (the plugin's decoding among them) as DAP's.

The plugin reports decoding, building call trees and solving values through
LLDB's SBProgress (debugger/progress_reporter.py); LLDB broadcasts them.  For
a client that says ``supportsProgressReporting``, a thread listens and sends
``progressStart``, ``progressUpdate`` and ``progressEnd``.  Each is
cancellable: the client's ``cancel`` with its ``progressId`` interrupts the
work (server.py), as Ctrl-C does in LLDB.
"""

import threading

import lldb

_UNKNOWN_TOTAL = 2**64 - 1  # LLDB's total for work of unknown size
_WAIT_SECONDS = 1  # how long the listener waits for an event before it looks whether to stop


class ProgressForwarder:
    def __init__(self, debugger, send):
        self._send = send  # sends an event: send(name, body)
        self._listener = lldb.SBListener("lldb-trace dap progress")
        self._listener.StartListeningForEvents(debugger.GetBroadcaster(), lldb.SBDebugger.eBroadcastBitProgress)
        self._started = set()
        self._stopped = threading.Event()
        threading.Thread(target=self._forward, name="dap-progress", daemon=True).start()

    def stop(self):
        self._stopped.set()

    def _forward(self):
        event = lldb.SBEvent()
        while not self._stopped.is_set():
            if not self._listener.WaitForEvent(_WAIT_SECONDS, event):
                continue
            data = lldb.SBDebugger.GetProgressDataFromEvent(event)
            try:
                self._report(data)
            except Exception:  # the client went away (or a malformed event): nothing more to show
                return

    def _report(self, data):
        number = data.GetValueForKey("progress_id").GetUnsignedIntegerValue()
        done = data.GetValueForKey("completed").GetUnsignedIntegerValue()
        total = data.GetValueForKey("total").GetUnsignedIntegerValue()
        message = data.GetValueForKey("message").GetStringValue(1000) or ""
        body = {"progressId": str(number)}
        if total and total != _UNKNOWN_TOTAL:
            body["percentage"] = min(100, done * 100 // total)
        if number not in self._started:
            self._started.add(number)
            self._send("progressStart", {**body, "title": message or "working", "cancellable": True})
        elif done < total:
            self._send("progressUpdate", {**body, "message": message})
        if done >= total:
            self._started.discard(number)
            self._send("progressEnd", {"progressId": str(number)})
