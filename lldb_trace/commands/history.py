"""``pt goto`` and the movements through history: ``pt reverse-step``... and ``pt step``... forwards.

Each moves the selected thread's position (debugger/movements.py) and prints
what LLDB prints at a stop, then the position.  On a loaded trace, LLDB's own
commands then describe that point; on a live process, a history view does
(debugger/history_view.py) until the thread is back at the end.
"""

import lldb

from .. import progress
from ..debugger.movements import Request, move
from ..debugger.progress_reporter import LldbReporter
from ..errors import LldbTraceError
from .base import CONTAINER, EncodableResult, TraceCommand, help_paragraphs, parse_number

HISTORY_HELP = (
    "Positions are item indices as 'trace dump --instructions' numbers them (0: the oldest); the end is where"
    " the thread stopped. At a past position 'bt', 'frame select', 'source list', 'disassemble -p' and 'thread"
    " list' describe that point; 'register read', 'frame variable', 'p' and 'memory read' show the values known"
    " there (from a core file where the trace ends and the state where recording started, carried along the"
    " trace) and say which are not known. Watchpoints set on a trace stop every movement"
    " right after a write, as breakpoints stop it. On a live process the past is shown in a history view (a second"
    " target over the same trace); the process itself is never touched, and 'pt goto end' returns to it."
)


class PositionError(LldbTraceError):
    """A position that is no place in history."""


class GotoCommand:
    """``pt goto``, a raw command: LLDB's option parser would take ``pt goto -1`` for an unknown option."""

    name = "goto"
    full_name = f"{CONTAINER} goto"
    raw = True  # registered without -p (see commands/__init__.py)

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "Move the selected thread to a point of its trace's history: begin, end or an instruction index."

    def get_long_help(self):
        return help_paragraphs(
            "Usage: pt goto begin|end|N",
            "N is an index as 'trace dump --instructions' shows it (decimal, or hex as 0x1f); -N counts from the"
            " end (-1: the last instruction), as a dump of a large trace's end numbers them before the rest is"
            " decoded. A gap or an index out of range is an error and the position stays.",
            HISTORY_HELP,
        )

    def __call__(self, debugger, command, exe_ctx, result):
        result = EncodableResult(result)
        words = command.split()
        try:
            if words in (["-h"], ["--help"]):
                shown = lldb.SBCommandReturnObject()
                debugger.GetCommandInterpreter().HandleCommand(f"help {self.full_name}", shown)
                result.AppendMessage(shown.GetOutput().rstrip())
            elif len(words) != 1:
                raise PositionError("give one position: 'pt goto begin', 'pt goto end' or 'pt goto N' (an item index)")
            else:
                with progress.reporting(LldbReporter(debugger)):
                    result.AppendMessage(move(debugger, Request("goto", position=_position(words[0]))))
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
        except LldbTraceError as error:
            result.SetError(str(error))
        except Exception as error:  # a bug: say so in one line, keep the debugger going
            result.SetError(f"internal error in '{self.full_name}': {type(error).__name__}: {error} (please report it)")


def _position(text):
    if text in ("begin", "end"):
        return text
    number = parse_number(text)
    if number is not None:
        return number
    back = parse_number(text[1:]) if text.startswith("-") else None
    if back:
        return -back  # counted from the end, as a dump of a large trace's end numbers its items
    raise PositionError(
        f"unknown position '{text}': give begin, end or an instruction index (decimal, 0x hex or 0 octal; -N counts"
        " back from the end)"
    )


class MoveCommand(TraceCommand):
    """A movement through history; subclasses set ``name``, ``request`` and the help."""

    request = None

    def setup_command_definition(self):
        pass

    def run(self, debugger, args, exe_ctx, result):
        if args:
            raise LldbTraceError(f"'{self.full_name}' takes no arguments (it moves the selected thread)")
        result.AppendMessage(move(debugger, self.request))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def _help(what, gdb):
    return help_paragraphs(
        f"{what} As GDB's '{gdb}' does in replay; at either end of history it stays there.", HISTORY_HELP
    )


class ReverseStepiCommand(MoveCommand):
    name, request = "reverse-stepi", Request("stepi", reverse=True)
    short_help = "Step one instruction back through the selected thread's history."
    long_help = _help("One instruction back.", "reverse-stepi")


class ReverseNextiCommand(MoveCommand):
    name, request = "reverse-nexti", Request("nexti", reverse=True)
    short_help = "Step one instruction back, a whole call counting as one."
    long_help = _help(
        "One instruction back; back over a call's return it goes to the call instruction.", "reverse-nexti"
    )


class ReverseStepCommand(MoveCommand):
    name, request = "reverse-step", Request("step", reverse=True)
    short_help = "Step back to the start of the current source line, or the previous one, entering calls."
    long_help = _help(
        "Back to the start of the line (from its start: of the previous line); back over a call's return it enters"
        " the callee at the start of the last line it ran; functions without line information are run through.",
        "reverse-step",
    )


class ReverseNextCommand(MoveCommand):
    name, request = "reverse-next", Request("next", reverse=True)
    short_help = "Step back to the start of the current source line, or the previous one, over calls."
    long_help = _help(
        "Back to the start of the line (from its start: of the previous line), stepping over calls.", "reverse-next"
    )


class ReverseFinishCommand(MoveCommand):
    name, request = "reverse-finish", Request("finish", reverse=True)
    short_help = "Go back to the call instruction that entered the current function."
    long_help = _help(
        "Back out of the innermost frame, to the call instruction in its caller (GDB 13.1's stop).", "reverse-finish"
    )


class ReverseContinueCommand(MoveCommand):
    name, request = "reverse-continue", Request("continue", reverse=True)
    short_help = "Go back to the nearest earlier hit of an enabled breakpoint (or the beginning of history)."
    long_help = _help(
        "Back to the nearest earlier execution of an enabled breakpoint location ('breakpoint set' by address,"
        " function or file:line). 'process continue --reverse' does the same on a trace.",
        "reverse-continue",
    )


class StepiCommand(MoveCommand):
    name, request = "stepi", Request("stepi")
    short_help = "Step one instruction forwards through the selected thread's history."
    long_help = _help("One instruction forwards, through history (the process does not run).", "stepi")


class NextiCommand(MoveCommand):
    name, request = "nexti", Request("nexti")
    short_help = "Step one instruction forwards through history, a whole call counting as one."
    long_help = _help("One instruction forwards; a call runs to its return address.", "nexti")


class StepCommand(MoveCommand):
    name, request = "step", Request("step")
    short_help = "Step forwards through history to the next source line, entering calls."
    long_help = _help(
        "To the start of the next line; a call into a function with line information stops after its prologue,"
        " one without is run through.",
        "step",
    )


class NextCommand(MoveCommand):
    name, request = "next", Request("next")
    short_help = "Step forwards through history to the next source line, over calls."
    long_help = _help("To the start of the next line of this frame (or of its caller once it returns).", "next")


class FinishCommand(MoveCommand):
    name, request = "finish", Request("finish")
    short_help = "Go forwards through history until the current function returns."
    long_help = _help("Forwards to the return address in the caller, mid-line.", "finish")


class ContinueCommand(MoveCommand):
    name, request = "continue", Request("continue")
    short_help = "Go forwards through history to the next hit of an enabled breakpoint (or the end)."
    long_help = _help(
        "Forwards to the nearest later execution of an enabled breakpoint location. On a live process, reaching the"
        " end selects the process again, and the next 'continue' runs it.",
        "continue",
    )


COMMANDS = (
    GotoCommand,
    ReverseStepiCommand,
    ReverseNextiCommand,
    ReverseStepCommand,
    ReverseNextCommand,
    ReverseFinishCommand,
    ReverseContinueCommand,
    StepiCommand,
    NextiCommand,
    StepCommand,
    NextCommand,
    FinishCommand,
    ContinueCommand,
)
