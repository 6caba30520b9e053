"""LLDB's own stepping commands on a trace: they move the selected thread forwards through its history.

On a loaded trace, or a live process's history view, ``thread step-in``
(``s``), ``thread step-over`` (``n``), ``thread step-out`` (``finish``),
``thread step-inst`` (``si``), ``thread step-inst-over`` (``ni``) and
``process continue`` (``c``) move through history as ``pt step``...
``pt continue`` do: there is no process to run.  ``process continue
--reverse`` (LLDB >= 21) is ``pt reverse-continue`` there, and also on a live
process that is traced (its past then shows in a history view).  The
overrides are installed by commands/start.py, which also routes these
commands to the live recorder; everything else is LLDB's own.
"""

from ..debugger import histories
from ..debugger.movements import Request, move
from ..errors import LldbTraceError
from .base import parse_number

MOVES = {
    "process continue": "continue",
    "thread continue": "continue",
    "thread step-in": "step",
    "thread step-over": "next",
    "thread step-out": "finish",
    "thread step-inst": "stepi",
    "thread step-inst-over": "nexti",
}
REVERSE = ("-R", "--reverse")
FORWARD = ("-F", "--forward")
COUNT = ("-c", "--count")


class HistoryStepError(LldbTraceError):
    """An option a movement through history cannot honour."""


def run(debugger, argv):
    """Move through history as ``argv`` (the command words, then its arguments) asks; None when it is not ours."""
    command, arguments = " ".join(argv[:2]), list(argv[2:])
    target = debugger.GetSelectedTarget()
    if histories.shows_history(target):
        return move(debugger, _request(command, arguments))
    if command == "process continue" and any(argument in REVERSE for argument in arguments):
        histories.trace_of(target)  # a live process's past, if it is traced
        return move(debugger, _request(command, arguments))
    return None


def _request(command, arguments):
    kind = MOVES[command]
    if kind == "continue" and command == "process continue":
        reverse = bool(arguments) and arguments[0] in REVERSE
        if len(arguments) > 1 or (arguments and arguments[0] not in REVERSE + FORWARD):
            raise HistoryStepError("on a trace, 'process continue' moves through history: it takes only -R or -F")
        return Request(kind, reverse=reverse)
    if kind in ("stepi", "nexti") and len(arguments) == 2 and arguments[0] in COUNT:
        count = parse_number(arguments[1])
        if not count:
            raise HistoryStepError(f"{arguments[0]} {arguments[1]}: give a count of 1 or more")
        return Request(kind, count=count)
    if arguments:
        takes = " (or -c COUNT)" if kind in ("stepi", "nexti") else ""
        raise HistoryStepError(
            f"on a trace, '{command}' moves the selected thread through history: it takes no options{takes}"
        )
    return Request(kind)
