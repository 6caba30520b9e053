"""Moving through a thread's history with GDB's stepping semantics, forwards and backwards.

The reference is GDB's reverse execution (``record full``), with the
behaviour GDB 14 fixed where GDB 13 is inconsistent (see docs/time-travel.md
and test_traces/history/):

- ``step``/``next`` forwards stop where GDB stops a live process
  (forward_lines.py); ``reverse-step``/``reverse-next`` go to the start of a
  line run (backward_lines.py);
- ``stepi`` moves one instruction; ``nexti`` counts a call and all it ran as
  one; ``finish`` stops at the return address, mid-line (or where a longjmp
  or a throw out of the frame landed); ``reverse-finish`` at the call
  instruction, and the ``reverse-step``/``reverse-next`` right after it go
  on to the line before the calling line, as GDB 14 and later do;
- a breakpoint on the way stops any of them (thread_history.py), and one
  that reaches either end of history says "No more reverse-execution
  history."; a gap stops a movement next to it.

Each function returns the Movement; ThreadHistory applies it.
"""

from ..libipt import InsnClass
from . import gaps
from .backward_lines import backward_line, line_run_start
from .forward_lines import forward_line
from .frame_walk import call_item, replacement, row_at
from .movement import NO_MORE_HISTORY, HistoryError, Movement

OUTERMOST = '"finish" not meaningful in the outermost frame.'


def stepi(history, reverse=False):
    """One instruction; a gap is stepped over, with a message naming it."""
    position, step = history.position, -1 if reverse else 1
    target = position + step
    if not 0 <= target <= history.end:
        return Movement(position, NO_MORE_HISTORY)
    if target < history.end and history.map.is_gap(target):
        return gaps.cross(history, position, reverse)
    return Movement(target)


def nexti(history, reverse=False):
    """One instruction, a call and everything it ran counting as one."""
    position, row = history.position, row_at(history, history.position)
    if not reverse:
        if position == history.end:
            return Movement(position, NO_MORE_HISTORY)
        if position + 1 < history.end and history.map.branch_at(position) == InsnClass.CALL:
            child = history.map.child_at(row, position + 1) if row is not None and row >= 0 else None
            if child is not None:
                return Movement(min(int(history.map.forest.last[child]) + 1, history.end))
        return stepi(history)
    if position == 0:
        return Movement(0, NO_MORE_HISTORY)
    if row is not None and row >= 0:
        child = history.map.child_at(row, position - 1)
        if child is not None:
            call = call_item(history, child)
            return Movement(call) if call >= 0 else gaps.lost_call(history, child)
    return stepi(history, reverse=True)


def finish(history, reverse=False):
    """Out of the innermost frame: to its return address, or (reverse) to the call instruction that made it; out
    of an inlined call (frame #0 an inlined function's) to the first instruction past it, or (reverse) to its
    entry, in the frame that holds it, as GDB does."""
    row = row_at(history, history.position)
    pc = history.pc_at(history.position) if row is not None else None
    calls = history.symbolizer.inlined_ranges(pc) if pc is not None else []
    # at an inlined call's entry GDB stands in its caller (the call has not begun): the next one out is left
    ranges = next((ranges for ranges in calls if min(start for start, _ in ranges) != pc), None)
    if ranges:
        return _out_of_inlined(history, row, ranges, reverse)
    if row is None:  # stopped at a callee's door: the call instruction is the item before
        return Movement(history.end - 1) if reverse else Movement(history.end, NO_MORE_HISTORY)
    if history.map.is_root(row):
        raise HistoryError(OUTERMOST)
    if reverse:
        call = call_item(history, row)
        return Movement(call) if call >= 0 else gaps.lost_call(history, row)
    while (successor := replacement(history, row)) is not None:  # it tail-called: on to where that returns
        row = successor
    return Movement(min(int(history.map.forest.last[row]) + 1, history.end))


def _out_of_inlined(history, row, ranges, reverse):
    """The first position in frame ``row`` whose instruction lies outside the inlined call's ``ranges``, its
    callees' positions passed over (the frame's own end where it ends first); reverse, as GDB does, the latest
    execution of the inlined call's entry (its lowest address), or the frame's first position."""
    position, forest, entry = history.position, history.map.forest, min(start for start, _ in ranges)
    while True:
        if reverse:
            if position == 0:
                return Movement(0, NO_MORE_HISTORY)
            child = history.map.child_at(row, position - 1)
            earlier = call_item(history, child) if child is not None else position - 1
            if row_at(history, earlier) != row:
                return Movement(position)  # the frame began inside the inlined call
            position = earlier
            if history.pc_at(position) == entry:
                return Movement(position)
            continue
        child = history.map.child_at(row, position + 1) if history.map.branch_at(position) == InsnClass.CALL else None
        position = int(forest.last[child]) + 1 if child is not None else position + 1
        if position >= history.end:
            return Movement(history.end)
        if row_at(history, position) != row:
            return Movement(position)  # the frame itself returned first
        pc = history.pc_at(position)
        if pc is None or not any(start <= pc < end for start, end in ranges):
            return Movement(position)


def step(history, reverse=False):
    return _back_a_line(history, enter=True) if reverse else forward_line(history, enter=True)


def next_line(history, reverse=False):
    return _back_a_line(history, enter=False) if reverse else forward_line(history, enter=False)


def _back_a_line(history, enter):
    """``reverse-step``/``reverse-next``; right after a ``reverse-finish`` the calling line counts as stepped
    back over already, so one command reaches the line before it, as GDB >= 14 does (GDB bug 29927; GDB 13
    first went to the start of the calling line)."""
    start = line_run_start(history) if history.reverse_finished else history.position
    if start == history.position:
        return backward_line(history, enter)
    at_call, history.position = history.position, start
    try:
        return backward_line(history, enter)
    finally:
        history.position = at_call
