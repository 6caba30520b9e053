"""Gaps are no place to stand: a movement that would end on one stops beside it or crosses it.

A gap (a decode error, an overflow, code in a module nobody has) is an item
of history whose instructions are unknown; several may follow one another,
and a trace may end with some.  The stepping walks stop next to a gap they
meet, but a target computed from the call forest (the item after a call, the
call that made a frame) can still be one, or lie before the trace: every
movement passes through ``settle`` before the thread takes its position.
"""

from .movement import NO_MORE_HISTORY, Movement


def stopped_message(gap):
    return f"stopped at a gap in the trace ({gap.text}): 'pt stepi' moves past it"


def crossed_message(gap):
    return f"crossed a gap in the trace ({gap.text}): what ran there is unknown"


def gap_run(history, index, step):
    """The first index from ``index`` on, moving by ``step``, that is no gap (-1 or ``end`` if none is)."""
    frames = history.map
    while 0 <= index < history.end and frames.is_gap(index):
        index += step
    return index


def cross(history, position, reverse):
    """The instruction beyond the gaps next to ``position`` in that direction, with a message saying so;
    staying put when only the beginning of the trace lies beyond them."""
    step = -1 if reverse else 1
    first_gap = history.map.item(position + step)
    beyond = gap_run(history, position + step, step)
    if beyond < 0:
        return Movement(position, stopped_message(first_gap))
    return Movement(beyond, crossed_message(first_gap))


def ends_in_gap(history):
    """Does the trace end with a gap, so that what the thread ran last, and its frames, are unknown?"""
    return history.end > 0 and history.map.is_gap(history.end - 1)


def settle(history, movement, start):
    """``movement`` with a position the thread can stand at: not before the trace, not on a gap.

    Going forwards onto a gap stops before it (or crosses it, when that is no move at all); going
    backwards onto one stops after it (or crosses it)."""
    target, end = movement.position, history.end
    if target < 0:  # the call that made a frame, before the trace began
        return settle(history, Movement(0, NO_MORE_HISTORY), start)
    if target >= end or not history.map.is_gap(target):
        return movement
    reverse = target < start
    step = -1 if reverse else 1
    near = gap_run(history, target, -step)  # the instruction on the side the movement came from
    if near != start and 0 <= near < end:
        return Movement(near, stopped_message(history.map.item(near + step)))
    beyond = gap_run(history, target, step)
    if beyond < 0:
        return Movement(start, stopped_message(history.map.item(target)))
    return Movement(beyond, crossed_message(history.map.item(target)))


def lost_call(history, row):
    """Where going back over call ``row`` stops when its call instruction is not in the trace (it ran before
    the trace began, or in a gap): at the first item of ``row`` the trace holds, beside what hides the call."""
    first = int(history.map.forest.first[row])
    if first == 0:
        return Movement(0, NO_MORE_HISTORY)
    before = history.map.item(first - 1)
    return Movement(first, stopped_message(before) if not isinstance(before, int) else None)
