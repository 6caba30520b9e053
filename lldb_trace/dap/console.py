"""The debug console: LLDB's commands (the ``pt`` commands among them) typed by the user.

A line is a command when it starts with a backtick, or with an LLDB
command, alias, user command or abbreviation of one (what ``help`` knows)
that is not also a variable of the frame
(``n`` is the variable ``n`` where there is one, else ``next``); anything
else is an expression (inspection.py).  A command that moves a thread
(``pt reverse-step``, ``pt goto 90``, ``thread select 2``) is followed by a
``stopped`` event, so the client shows the new position; ``quit`` ends the
session.
"""

import lldb

from ..debugger.histories import history_position
from . import stepping
from .arguments import RequestError


def is_command(session, text, frame):
    if text.startswith("`"):
        return True
    word = text.split(None, 1)[0] if text.strip() else ""
    if not word or (frame is not None and frame.FindVariable(word).IsValid()):
        return False
    interpreter = session.debugger.GetCommandInterpreter()
    if interpreter.CommandExists(word) or interpreter.AliasExists(word):
        return True
    succeeded, *_ = session.command(f"help {word}")  # a user command or container ('pt'), or an abbreviation
    return succeeded


def run(session, text):
    """Run a console command: its output is the result, its failure an error response; a move is a stop."""
    before = _where(session)
    succeeded, output, error, status = session.command(text)
    after = _where(session)
    if status == lldb.eReturnStatusQuit:  # LLDB's 'quit' ends the session, as the client's stop button does
        session.later("terminated")
        return {"result": "", "variablesReference": 0}
    if after is not None and after != before:
        stepping.moved(session, after[2], output, "step", echo=False)  # the output is the result already
    said = (output + error).strip()
    if not succeeded or said.startswith("error:"):  # the plugin's own answers of "not known" say it so
        raise RequestError(said or f"'{text}' failed")
    return {"result": (output + error).rstrip("\n"), "variablesReference": 0}


def _where(session):
    """What a movement changes: the selected target, process, thread, and every thread's position."""
    if not session.launched:
        return None
    target = session.debugger.GetSelectedTarget()
    process = target.GetProcess()
    if not process.IsValid():
        return None
    thread = process.GetSelectedThread()
    positions = tuple(history_position(target, other.GetThreadID()) for other in process)
    return session.debugger.GetIndexOfTarget(target), process.GetProcessID(), thread.GetThreadID(), positions
