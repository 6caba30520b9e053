"""Moving through history from DAP: each step request runs the ``pt`` movement it means, then says where it stopped.

Nothing runs in a trace, so every movement is done before its response (a
failure is an error response) and the ``stopped`` event follows it.  The
event's reason comes from what the plugin says: its stop description
(``history: breakpoint 1.1, instruction 164 of 274``) names a breakpoint or
watchpoint hit, and "No more reverse-execution history." is a stop at either
end of history, reason ``history boundary``: LLDB's own name for that stop
(eStopReasonHistoryBoundary), which DAP allows (its reasons are an open set),
and which lets a client tell the edge of the recording from a step.
"""

import re
from pathlib import PurePath

from ..api import of_target
from ..errors import LldbTraceError
from ..history.movement import NO_MORE_HISTORY
from .arguments import RequestError

# request -> the pt movement, by line and by instruction (DAP's "granularity")
MOVES = {
    "continue": ("continue", "continue"),
    "next": ("next", "nexti"),
    "stepIn": ("step", "stepi"),
    "stepOut": ("finish", "finish"),
    "reverseContinue": ("reverse-continue", "reverse-continue"),
    "stepBack": ("reverse-next", "reverse-stepi"),
}
GRANULARITIES = ("statement", "line", "instruction")
MAX_GOTO_TARGETS = 1000  # the newest executions of a line; 'pt find --line' lists them all
_HIT = re.compile(r"history: (breakpoint|watchpoint) (\d+)")
_THREAD_STATUS = "* thread #"  # where LLDB's stop report begins in a movement's output
_POSITION = "Position: "


def first_stop(thread):
    """The ``stopped`` event at the start: where the thread's trace ends, as a crash or as the entry."""
    description = _description(thread)
    reason = "exception" if description.startswith("signal ") else "entry"  # a crash, or where recording ended
    return {
        "reason": reason,
        "description": description,
        "text": description,
        "threadId": thread.GetThreadID(),
        "allThreadsStopped": True,
    }


def moved(session, tid, output, reason, echo=True):
    """After a movement of thread ``tid`` printed ``output``: the ``stopped`` event, and (``echo``) the lines
    of the plugin's report that a client does not show otherwise: the end of history, a gap, the position."""
    thread = session.target().GetProcess().GetThreadByID(tid)
    lines = output.splitlines()
    status = next((k for k, line in enumerate(lines) if line.startswith(_THREAD_STATUS)), len(lines))
    messages = [line for line in lines[:status] if not line.startswith(_POSITION)]
    position = [line for line in lines if line.startswith(_POSITION)]
    if echo and (messages or position):
        session.later("output", {"category": "console", "output": "\n".join(messages + position[-1:]) + "\n"})
    description = _description(thread)
    body = {"reason": reason, "threadId": tid, "allThreadsStopped": True, "description": description}
    hit = _HIT.match(thread.GetStopDescription(256))
    if NO_MORE_HISTORY in messages:
        body["reason"], body["description"] = "history boundary", f"history boundary, {description}"
    elif hit and hit.group(1) == "breakpoint":
        body["reason"], body["hitBreakpointIds"] = "breakpoint", [int(hit.group(2))]
    elif hit:
        body["reason"] = "data breakpoint"
    if messages:
        body["text"] = " ".join(messages)
    session.handles.reset()
    session.later("stopped", body)


def _description(thread):
    """The thread's stop as one short line: ``breakpoint 1.1, instruction 164 of 274``, ``signal SIGSEGV: ...``."""
    return thread.GetStopDescription(1024).removeprefix("history: ").split("; ")[0]


def _mover(request):
    def handler(session, arguments):
        tid = arguments.integer("threadId")
        granularity = arguments.string("granularity", "statement")
        if granularity not in GRANULARITIES:
            raise RequestError(f"granularity must be one of {', '.join(GRANULARITIES)}, not {granularity[:40]!r}")
        session.thread(tid)
        word = MOVES[request][granularity == "instruction"]
        _run(session, tid, f"pt {word}", "step")
        return {"allThreadsContinued": False} if request == "continue" else None

    return handler


def _run(session, tid, command, reason):
    succeeded, output, error, _ = session.command(command)
    if not succeeded:
        raise RequestError(error.strip().removeprefix("error:").strip() or f"'{command}' failed")
    moved(session, tid, output, reason)


def goto(session, arguments):
    """Stand at an execution that gotoTargets listed: its id is the item index ('pt goto INDEX')."""
    tid, index = arguments.integer("threadId"), arguments.integer("targetId")
    session.thread(tid)
    _run(session, tid, f"pt goto {index}", "goto")


def goto_targets(session, arguments):
    """The executions of a source line by the selected thread, newest first, as 'pt find --line' lists them."""
    source = arguments.object("source")
    path = source.string("path", None) or source.string("name")
    line = arguments.line("line", session.lines_from)
    target = session.target()
    thread = target.GetProcess().GetSelectedThread()
    traced = of_target(target).thread(thread.GetThreadID())
    try:
        matches = traced.find(line=(path, line), limit=MAX_GOTO_TARGETS)
    except LldbTraceError:  # the client's copy of the file may live elsewhere than where it was built
        matches = traced.find(line=(PurePath(path).name, line), limit=MAX_GOTO_TARGETS)
    history = traced.history
    targets = []
    for match in matches:
        function = target.ResolveLoadAddress(match.function).GetSymbol().GetName() if match.function else None
        label = f"instruction {match.index}" + (f" in {function}" if function else "") + f", call depth {match.depth}"
        targets.append(
            {
                "id": match.index,
                "label": label,
                "line": line - 1 + session.lines_from,
                "instructionPointerReference": f"0x{history.pc_at(match.index):x}",
            }
        )
    return {"targets": targets}


HANDLERS = {
    **{request: _mover(request) for request in MOVES},
    "goto": goto,
    "gotoTargets": goto_targets,
}
