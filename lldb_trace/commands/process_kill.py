"""``process kill`` (and its alias ``kill``) where a thread stands in its history.

A loaded trace's process is a ScriptedProcess: LLDB's ``process kill`` stops
its private state thread yet leaves it "stopped", and the next movement (which
resumes it to show the new position) waits for a stop that never comes.  So
there the override says the recording cannot be killed and how to close it.
In a live process's history view it kills the live process, as ``process
kill`` in the present would: the view is closed and the live target selected
first; LLDB reports the exit as after its own command.
"""

from ..debugger import history_view
from ..debugger.histories import live_of, shows_history

_REFUSED = "error: a loaded trace's process is a recording and cannot be killed: 'target delete' closes it"


def install(debugger):
    debugger.GetCommandInterpreter().SetCommandOverrideCallback("process kill", _override(debugger))


def _override(debugger):
    def override(*_argv):
        target = debugger.GetSelectedTarget()
        if not shows_history(target):
            return False  # a live process or a core: LLDB's own command
        live = live_of(target)
        if live is None:
            _write(debugger.GetErrorFile(), _REFUSED)
            return True
        history_view.close(debugger, target)
        debugger.SetSelectedTarget(live)
        error = live.GetProcess().Kill()  # LLDB reports the exit, as after its own command
        if error.Fail():
            _write(debugger.GetErrorFile(), f"error: {error.GetCString()}")
        return True

    return override


def _write(stream, text):
    stream.Write(f"{text}\n".encode())
    stream.Flush()
