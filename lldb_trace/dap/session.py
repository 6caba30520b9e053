"""One debug session: an in-process LLDB with the plugin, driven by DAP requests, answered one at a time.

The session owns the SBDebugger (``command script import lldb_trace``, then
``pt load``), dispatches each request to its handler (this module: the
session's life; stepping.py, inspection.py, breakpoints.py, code.py: the
rest) and turns every way a request can fail into an error response: a
RequestError or a plugin error (LldbTraceError) as its one-line message, any
other exception as an internal error naming the request, never a traceback.
Events a request causes (``stopped`` after a step) follow its response.
"""

import io
import os
import threading

import lldb

from ..commands.routing import quote
from ..errors import LldbTraceError
from . import breakpoints, code, inspection, stepping
from .arguments import Arguments, RequestError
from .progress import ProgressForwarder

CAPABILITIES = {
    "supportsConfigurationDoneRequest": True,
    "supportsFunctionBreakpoints": True,
    "supportsStepBack": True,
    "supportsGotoTargetsRequest": True,
    "supportsDisassembleRequest": True,
    "supportsSteppingGranularity": True,
    "supportsEvaluateForHovers": True,
    "supportsTerminateRequest": True,
    "supportsCancelRequest": True,
    "supportsDelayedStackTraceLoading": True,
    "exceptionBreakpointFilters": [],
}


class Session:
    """The debugger, the client's preferences, and what the current stop hands out (frame and variable ids)."""

    def __init__(self, send):
        self.send = send  # writes one message to the client (thread-safe)
        self.debugger = lldb.SBDebugger.Create(False)
        self.debugger.SetAsync(False)
        self.debugger.SetUseColor(False)
        self._null_input = open(os.devnull, "rb")  # noqa: SIM115 (LLDB reads from it for the session's life)
        self.debugger.SetInputFile(lldb.SBFile.Create(self._null_input, borrow=True))
        self.output = _Sink()  # what LLDB and the plugin print outside a command's result
        for setter in (self.debugger.SetOutputFile, self.debugger.SetErrorFile):
            setter(lldb.SBFile.Create(self.output, borrow=True))
        self.pending = []  # events to send after the current response
        self.launched = False
        self.ended = False
        self.lines_from = 1  # the client's first line and column: 1 (DAP's default) or 0
        self.columns_from = 1
        self.handles = inspection.Handles()
        self.source_breakpoints = {}  # source path -> the LLDB breakpoint ids setBreakpoints made there
        self.function_breakpoints = []
        self.sources = code.Sources()
        self.progress = None  # a ProgressForwarder once the client says it shows progress
        _, output, error, _ = self.command("command script import lldb_trace")
        if not self.command("help pt")[0]:  # the import prints its failure without failing
            raise LldbTraceError(f"cannot load the plugin into LLDB: {_one_line(error or output)}")

    # -- messages -----------------------------------------------------------------------------------

    def handle(self, message):
        """Answer one message from the client (a dict, any content)."""
        kind, command, seq = message.get("type"), message.get("command"), message.get("seq")
        if kind in ("response", "event"):
            return  # the server sends no requests, so no response is awaited; a client's event means nothing here
        request_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
        shown = command if isinstance(command, str) else ""
        try:
            if kind != "request":
                raise RequestError(f"a message's type must be 'request', not {kind!r}"[:200])
            if request_seq != seq:
                raise RequestError("a request needs an integer 'seq'")
            handler = HANDLERS.get(command) if isinstance(command, str) else None
            if handler is None:
                raise RequestError(f"unknown request {command!r}"[:200] + ": lldb-trace dap does not implement it")
            body = handler(self, Arguments(message.get("arguments")))
        except (RequestError, LldbTraceError) as error:
            self.pending.clear()
            self.respond(request_seq, shown, error=_one_line(str(error)))
        except Exception as error:  # a bug: an error response that says so, and the session goes on
            self.pending.clear()
            said = _one_line(f"internal error in '{shown}': {type(error).__name__}: {error} (please report it)")
            self.respond(request_seq, shown, error=said)
        else:
            self.respond(request_seq, shown, body)
        self.flush_output()
        events, self.pending = self.pending, []
        for event, body in events:
            self.event(event, body)

    def respond(self, request_seq, command, body=None, error=None):
        response = {"type": "response", "request_seq": request_seq, "command": command, "success": error is None}
        if error is not None:
            response["message"] = error
        elif body is not None:
            response["body"] = body
        self.send(response)

    def event(self, name, body=None):
        self.send({"type": "event", "event": name, **({"body": body} if body is not None else {})})

    def later(self, name, body=None):
        """Send event ``name`` after the current request's response."""
        self.pending.append((name, body))

    def flush_output(self):
        """What LLDB printed outside the results, to the debug console."""
        text = self.output.take()
        if text:
            self.event("output", {"category": "console", "output": text})

    # -- LLDB ---------------------------------------------------------------------------------------

    def command(self, text):
        """Run an LLDB command: ``(succeeded, output, error, status)``, with what it printed elsewhere."""
        result = lldb.SBCommandReturnObject()
        self.debugger.GetCommandInterpreter().HandleCommand(text, result)
        printed, output = self.output.take(), result.GetOutput() or ""
        if printed.strip() and printed.strip() in output:  # 'script print(...)': LLDB gives it to both
            printed = ""
        return result.Succeeded(), printed + output, result.GetError() or "", result.GetStatus()

    def target(self):
        """The selected target, stopped in its history; a RequestError before a trace is loaded."""
        if not self.launched:
            raise RequestError("no trace loaded yet: send 'launch' with {\"trace\": PATH} first")
        target = self.debugger.GetSelectedTarget()
        if not target.IsValid() or not target.GetProcess().IsValid():
            raise RequestError("no trace is selected: 'trace load PATH' in the debug console loads one")
        return target

    def thread(self, tid, select=True):
        """The thread with id ``tid``, selected unless ``select`` is False (LLDB's commands move the selected
        thread, and the console's commands see it)."""
        process = self.target().GetProcess()
        thread = process.GetThreadByID(tid)
        if not thread.IsValid():
            known = ", ".join(str(t.GetThreadID()) for t in process)
            raise RequestError(f"no thread {tid} in the trace (its threads: {known})")
        if select:
            process.SetSelectedThread(thread)
        return thread

    def close(self):
        if self.progress is not None:
            self.progress.stop()
        lldb.SBDebugger.Destroy(self.debugger)
        self._null_input.close()


class _Sink(io.RawIOBase):
    """A file for LLDB's output and error streams: text kept until taken, never written to the protocol's stdout."""

    def __init__(self):
        super().__init__()
        self._data, self._lock = bytearray(), threading.Lock()

    def writable(self):
        return True

    def write(self, data):
        with self._lock:
            self._data += data
        return len(data)

    def take(self):
        with self._lock:
            data, self._data = bytes(self._data), bytearray()
        return data.decode("utf-8", "replace")


def _one_line(text):
    """An error message on one line: LLDB's multi-line errors joined, the ``error:`` prefixes dropped."""
    lines = [line.strip().removeprefix("error:").strip() for line in text.strip().splitlines()]
    return " ".join(line for line in lines if line) or "failed (no message)"


# -- the session's life ---------------------------------------------------------------------------------


def initialize(session, arguments):
    if arguments.boolean("supportsProgressReporting", False) and session.progress is None:
        session.progress = ProgressForwarder(session.debugger, session.event)
    session.lines_from = 1 if arguments.boolean("linesStartAt1", True) else 0
    session.columns_from = 1 if arguments.boolean("columnsStartAt1", True) else 0
    return CAPABILITIES


def launch(session, arguments):
    """Load the trace: ``trace`` (a bundle, its folder or a perf.data), ``core``, ``searchPaths``, ``sysroots``
    and ``initCommands`` (LLDB commands run first, such as ``settings set target.source-map A B``)."""
    if session.launched:
        raise RequestError("a trace is loaded already: one 'launch' per session")
    path = arguments.string("trace")
    words = ["pt", "load"]
    if "core" in arguments:
        words += ["--core", quote(arguments.string("core"))]
    for folder in arguments.strings("searchPaths", None):
        words += ["--search-path", quote(folder)]
    for root in arguments.strings("sysroots", None):
        words += ["--sysroot", quote(root)]
    for text in arguments.strings("initCommands", None):
        succeeded, output, error, _ = session.command(text)
        session.event("output", {"category": "console", "output": f"(lldb) {text}\n{output}{error}"})
        if not succeeded:
            raise RequestError(f"initCommands: '{text}' failed: {_one_line(error)}")
    succeeded, output, error, _ = session.command(" ".join([*words, "--", quote(path)]))
    if not succeeded:
        raise RequestError(_one_line(error))
    session.event("output", {"category": "console", "output": output})
    session.launched = True
    session.later("initialized")


def configuration_done(session, arguments):
    """The client has set its breakpoints: the threads are shown stopped where their traces end."""
    target = session.target()
    thread = target.GetProcess().GetSelectedThread()
    session.later("stopped", stepping.first_stop(thread))


def threads(session, arguments):
    process = session.target().GetProcess() if session.launched else None
    shown = []
    for thread in process or ():
        name = thread.GetName()
        label = f"thread #{thread.GetIndexID()} (tid {thread.GetThreadID()})" + (f" {name}" if name else "")
        shown.append({"id": thread.GetThreadID(), "name": label})
    return {"threads": shown}


def pause(session, arguments):
    """Nothing runs between requests: the thread is stopped already, and says so."""
    tid = arguments.integer("threadId")
    session.thread(tid)
    session.later("stopped", {"reason": "pause", "threadId": tid, "allThreadsStopped": True})


def cancel(session, arguments):
    """A request being answered was interrupted when this arrived (server.py); nothing more to do."""


def disconnect(session, arguments):
    session.ended = True


def terminate(session, arguments):
    session.later("terminated")


HANDLERS = {
    "initialize": initialize,
    "launch": launch,
    "configurationDone": configuration_done,
    "threads": threads,
    "pause": pause,
    "cancel": cancel,
    "disconnect": disconnect,
    "terminate": terminate,
    **stepping.HANDLERS,
    **inspection.HANDLERS,
    **breakpoints.HANDLERS,
    **code.HANDLERS,
}
