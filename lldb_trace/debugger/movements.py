"""Moving the selected thread through its history, and saying where it went as LLDB says where a thread stopped.

Every movement (``pt goto``, ``pt reverse-step``..., and LLDB's own stepping
commands on a trace) runs here: find the selected thread's history
(histories.py), move it (lldb_trace.history), show the new position in LLDB
(history_view.py), then report what LLDB prints at a stop (the thread line,
frame #0 and its source) and the position.  A bad request raises before
anything moves.
"""

from dataclasses import dataclass

import lldb

from ..history.movement import Movement
from . import histories, history_view, history_watchpoints


@dataclass(frozen=True)
class Request:
    """A movement: ``kind`` names a ThreadHistory method (stepi, nexti, step, next, finish, continue, goto)."""

    kind: str
    reverse: bool = False
    count: int = 1  # stepi/nexti: how many
    position: str | int | None = None  # goto: "begin", "end" or an index


def move(debugger, request):
    """Move the selected thread as ``request`` says; the report to print."""
    target, thread = histories.selected_thread(debugger)
    trace = histories.trace_of(target)
    tid = thread.GetThreadID()
    history = histories.history_of(target, tid, trace)
    before = history.position
    history_watchpoints.forget_stops(trace, tid)
    movement, watched = _perform(history, request, target, trace, tid)
    shown = history_view.show(debugger, target, tid, history.at_end)
    return _report(movement, shown, history, moved=history.position != before, watched=watched)


def _perform(history, request, target, trace, tid):
    """``(Movement, the watchpoint report's lines or None)``."""
    if request.kind == "goto":
        return history.goto(_position(history, request.position)), None
    breakpoints = histories.breakpoint_locations(target, history)
    live = histories.live_of(target) or (None if histories.shows_history(target) else target)  # LLDB's watchpoints
    positions, stops = history_watchpoints.stop_positions(target, trace, tid, live)
    if request.kind == "continue":
        movement = history.continue_(breakpoints, request.reverse, positions)
    else:
        start = history.position
        step = getattr(history, request.kind)
        movement = step(request.reverse, breakpoints)
        for _ in range(request.count - 1):
            if movement.message or movement.breakpoint is not None:
                break
            movement = step(request.reverse, breakpoints)
        movement = _first_watched(history, start, movement, positions)
    if movement.position in stops and movement.message is None:
        watchpoint, access = stops[movement.position]
        return movement, history_watchpoints.note_stop(trace, tid, movement.position, watchpoint, access)
    return movement, None


def _first_watched(history, start, movement, positions):
    """A step that went past a watched write stops right after it instead, as it stops at a breakpoint."""
    if not len(positions) or movement.position == start:
        return movement
    if movement.position > start:
        passed = positions[(positions > start) & (positions <= movement.position)]
        stop = int(passed.min()) if len(passed) else None
    else:
        passed = positions[(positions >= movement.position) & (positions < start)]
        stop = int(passed.max()) if len(passed) else None
    return movement if stop is None else history.move(Movement(stop))


def _position(history, position):
    if position == "begin":
        return history.check(0)
    if position == "end":
        return history.end
    return history.resolve(position)


def _report(movement, thread, history, moved, watched=None):
    lines = list(watched or ())
    if movement.message:
        lines.append(movement.message)
    if not moved and not movement.message and movement.breakpoint is None and not watched:
        lines.append(f"Already at {history.describe()}.")
    stream = lldb.SBStream()
    if thread.IsValid() and thread.GetStatus(stream):
        lines.append(stream.GetData().rstrip("\n"))
    lines.append(f"Position: {history.describe()}.")
    return "\n".join(lines)
