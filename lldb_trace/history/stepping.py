"""Moving through a thread's history with GDB's stepping semantics, forwards and backwards.

The reference is GDB's reverse execution (``record full``), with the
behaviour GDB 14 fixed where GDB 13 is inconsistent (see design.md):

- a *line* is a run of consecutive instructions of one frame with the same
  line number (the several line-table rows GCC emits for a line are not
  stopping points);
- ``step`` enters a called function that has line information and stops
  after its prologue; ``next`` steps over calls; returning mid-line into the
  caller, both go on to the start of the next line; a function without line
  information is run through without stopping;
- from mid-line, ``reverse-step``/``reverse-next`` go to the start of the
  current line, else to the start of the previous one; when the instruction
  before is a return, ``reverse-step`` enters that callee and stops at the
  start of the last line it ran; leaving a function backwards through its
  entry goes on to the start of the calling line;
- ``finish`` stops at the return address, mid-line; ``reverse-finish`` at
  the call instruction (as GDB 13.1 does; GDB 14 goes on to the start of
  that line);
- at either end of history the thread stays there with "No more
  reverse-execution history."; a gap stops a movement next to it.
"""

from ..libipt import InsnClass
from .movement import NO_MORE_HISTORY, HistoryError, Movement

OUTERMOST = '"finish" not meaningful in the outermost frame.'


def stepi(history, reverse=False):
    """One instruction; a gap is stepped over, with a message naming it."""
    position, step = history.position, -1 if reverse else 1
    target = position + step
    if not 0 <= target <= history.end:
        return history.move(Movement(position, NO_MORE_HISTORY))
    if target < history.end and history.map.is_gap(target):
        gap = history.map.item(target)
        beyond = target + step
        if not 0 <= beyond <= history.end:
            return history.move(Movement(position, _gap_message(gap)))
        return history.move(Movement(beyond, f"crossed a gap in the trace ({gap.text}): what ran there is unknown"))
    return history.move(Movement(target))


def nexti(history, reverse=False):
    """One instruction, a call and everything it ran counting as one."""
    position, row = history.position, _row_at(history, history.position)
    if not reverse:
        if position == history.end:
            return history.move(Movement(position, NO_MORE_HISTORY))
        if position + 1 < history.end and history.map.branch_at(position) == InsnClass.CALL:
            child = history.map.child_at(row, position + 1) if row is not None and row >= 0 else None
            if child is not None:
                return history.move(_forward_to(history, int(history.map.forest.last[child]) + 1))
        return stepi(history)
    if position == 0:
        return history.move(Movement(0, NO_MORE_HISTORY))
    if row is not None and row >= 0:
        child = history.map.child_at(row, position - 1)
        if child is not None:
            return history.move(Movement(_call_item(history, child)))
    return stepi(history, reverse=True)


def finish(history, reverse=False):
    """Out of the innermost frame: to its return address, or (reverse) to the call instruction that made it."""
    row = _row_at(history, history.position)
    if row is None:  # stopped at a callee's door: the call instruction is the item before
        if reverse:
            return history.move(Movement(history.end - 1))
        return history.move(Movement(history.end, NO_MORE_HISTORY))
    if history.map.is_root(row):
        raise HistoryError(OUTERMOST)
    if reverse:
        return history.move(Movement(_call_item(history, row)))
    return history.move(_forward_to(history, int(history.map.forest.last[row]) + 1))


def step(history, reverse=False):
    return history.move(_backward_line(history, enter=True) if reverse else _forward_line(history, enter=True))


def next_line(history, reverse=False):
    return history.move(_backward_line(history, enter=False) if reverse else _forward_line(history, enter=False))


# -- forwards ----------------------------------------------------------------------------------------


def _forward_line(history, enter):
    position, end, frames = history.position, history.end, history.map
    if position == end:
        return Movement(end, NO_MORE_HISTORY)
    frame, line = _row_at(history, position), history.line_at(position)
    current = position
    while True:
        following = current + 1
        if following == end:
            return Movement(end, NO_MORE_HISTORY)
        if frames.is_gap(following):
            return Movement(current, _gap_message(frames.item(following)))
        row = frames.frame_row(following)
        if row == frame:
            seen = history.line_at(following)
            if seen is not None and seen != line:
                return Movement(following)
            current = following
        elif _inside(frames, row, frame):  # a call this frame made
            child = frames.child_at(frame, following)
            stop = _after_prologue(history, child) if enter else None
            if stop is not None:
                return Movement(stop)
            current = int(frames.forest.last[child])
        else:  # the frame returned (or left non-locally): mid-line in the frame it went to
            frame, line, current = row, history.line_at(following), following


def _after_prologue(history, row):
    """Where ``step`` into call ``row`` stops: after the prologue of a function with line information, or None."""
    entry = int(history.map.forest.entry[row])
    if not entry or history.line_of(entry) is None:
        return None  # no line information: run through it
    target = history.symbolizer.prologue_end(entry)
    entry_line = history.line_of(entry)
    for index, address in _own_items(history, row, int(history.map.forest.first[row])):
        if address == target or (target is None and address != entry and history.line_of(address) != entry_line):
            return index
    return None


def _forward_to(history, position):
    if position >= history.end:
        return Movement(history.end, NO_MORE_HISTORY)
    return Movement(position)


# -- backwards ---------------------------------------------------------------------------------------


def _backward_line(history, enter):
    position, frames = history.position, history.map
    if position == 0:
        return Movement(0, NO_MORE_HISTORY)
    frame, line = _row_at(history, position), history.line_at(position)
    if line is None and frame is not None and frame >= 0 and not frames.is_root(frame):
        # a function without line information: back to the start of the line that called it
        call = _call_item(history, frame)
        return Movement(_line_start(history, frames.frame_row(call), call))
    start = position  # the earliest item found of the line being walked back over
    while True:
        earlier = start - 1
        if earlier < 0:
            return Movement(0, None if start != position else NO_MORE_HISTORY)
        if frames.is_gap(earlier):
            return Movement(start, _gap_message(frames.item(earlier)))
        row = frames.frame_row(earlier)
        if frame is None:  # stopped at a callee's door: the item before is the call, in the caller
            return Movement(_line_start(history, row, earlier))
        if row != frame and _inside(frames, row, frame):  # back into a call this frame made, after its return
            child = frames.child_at(frame, earlier)
            if enter and history.line_of(int(frames.forest.entry[child]) or 0) is not None:
                return Movement(_line_start(history, row, earlier))
            earlier = _call_item(history, child)
        elif row != frame:  # back through this frame's entry: on to the start of the calling line
            return Movement(_line_start(history, row, earlier))
        seen = history.line_at(earlier)
        if seen is None or seen == line:
            start = earlier
        elif start != position:
            return Movement(start)  # the start of the line being walked back over
        else:
            line, start = seen, earlier  # the position began a line: on to the start of the previous one


def _line_start(history, row, index):
    """The first item of the line run that holds ``index`` in frame ``row`` (its callees skipped over)."""
    frames, line = history.map, history.line_at(index)
    start = index
    while start > 0:
        earlier = start - 1
        if frames.is_gap(earlier):
            break
        inner = frames.frame_row(earlier)
        if inner != row:
            if not _inside(frames, inner, row):
                break  # this frame's entry
            earlier = _call_item(history, frames.child_at(row, earlier))
        if history.line_at(earlier) != line:
            break
        start = earlier
    return start


# -- frames ------------------------------------------------------------------------------------------


def _row_at(history, position):
    """The forest row of the frame at ``position`` (None: the end, stopped at a callee's first instruction)."""
    return history.end_row() if position == history.end else history.map.frame_row(position)


def _inside(frames, row, frame):
    """Is ``row`` a call made (directly or not) by ``frame``?"""
    if frame is None or frame < 0 or row < 0 or row <= frame:
        return False
    forest = frames.forest
    return int(forest.first[row]) <= int(forest.last[frame])


def _call_item(history, row):
    """The item of the instruction that made call ``row``: its call, or (a signal handler) the one interrupted."""
    call = history.map.forest.call_item(row)
    return call if call is not None else max(0, int(history.map.forest.first[row]) - 1)


def _own_items(history, row, start):
    """``(index, address)`` of ``row``'s own items from ``start`` on, its callees skipped."""
    frames = history.map
    last = int(frames.forest.last[row])
    firsts, lasts, _ = frames.children(row)
    index = start
    k = 0
    while index <= last:
        while k < len(firsts) and lasts[k] < index:
            k += 1
        if k < len(firsts) and firsts[k] <= index:
            index = lasts[k] + 1
            continue
        stop = firsts[k] if k < len(firsts) else last + 1
        while index < stop:
            address = frames.address(index)
            if address is None:
                return
            yield index, address
            index += 1


def _gap_message(gap):
    return f"stopped at a gap in the trace ({gap.text}): 'pt stepi' moves past it"
