"""``reverse-step`` and ``reverse-next`` through history (GDB 14's fixed rules; docs/time-travel.md).

A *line* is a run of consecutive instructions of one frame with one line
number; the calls made from inside the run belong to it, the several
line-table rows GCC emits for a line do not split it.  From the middle of a
run both commands go to its first instruction, else to the first instruction
of the run before it in the same frame.  Going back over a call made inside
the run, ``reverse-step`` enters it when it returned through code with line
information and stops at the start of the last line it ran there (deeper
too); ``reverse-next`` steps over it.  A call that returned to the run's
first instruction was made by the line before: from the middle of the run
the walk stops before it; from the run's first instruction, ``reverse-step``
enters it (``reverse-next`` goes on to the start of its calling line).  Leaving
the function backwards through its entry goes on to the start of the calling
line, or stops at the call when the caller has no line information (a
function without line information is one run of such instructions).  A
frame a context switch went back to goes on, backwards, with the frame that
switched away (swapcontext): its line before is the switching call's.
"""

from .frame_walk import call_item, inside, resumed_call, row_at, switched
from .gaps import lost_call, stopped_message
from .movement import NO_MORE_HISTORY, Movement


def backward_line(history, enter):
    """Where ``reverse-step`` (``enter``) or ``reverse-next`` from the position stops."""
    position, frames = history.position, history.map
    if position == 0:
        return Movement(0, NO_MORE_HISTORY)
    frame, line = row_at(history, position), history.line_at(position)
    if frame is None:  # stopped at a callee's door: the item before is its call, in the caller
        return _calling_line(history, position - 1, enter)
    walk = _Walk(history, enter)
    start, stopped, entered = walk.run(position, frame, line)
    if entered is not None:
        return Movement(entered)
    resumed = _switched_back(history, frame, stopped)
    if start != position:  # mid-line: the start of this line, or of the calling one from the prologue
        if resumed is not None and history.line_at(resumed[1]) == line:  # the line began before the switch
            return _run_start(history, walk, resumed[0], resumed[1], enter)
        return _calling_line(history, stopped, enter) if walk.left_through_entry(stopped, frame) else walk.stop(start)
    if stopped < 0:
        return Movement(0)
    if walk.gap is not None:
        return walk.stop(start)
    row = frames.frame_row(stopped)
    if resumed is not None:  # the line before is the one that switched away, in the frame this one goes on with
        frame, stopped = resumed
    elif row != frame and not inside(frames, row, frame):  # this line began at the function's entry: to the caller
        return _calling_line(history, stopped, enter)
    elif row != frame:  # a call the line before made returned here
        if enter and history.line_at(stopped) is not None:
            inner_start, _, entered = walk.run(stopped + 1, row, history.line_at(stopped), first=stopped)
            return Movement(entered if entered is not None else inner_start)
        child = frames.child_at(frame, stopped)
        stopped = call_item(history, child)
        if stopped < 0:
            return lost_call(history, child)
    return _run_start(history, walk, frame, stopped, enter)


def line_run_start(history):
    """The first item of the line run holding the position, the calls made inside the run walked over."""
    position = history.position
    frame, line = row_at(history, position), history.line_at(position)
    if frame is None or line is None:
        return position
    start, _, _ = _Walk(history, enter=False).run(position, frame, line)
    return start


def _run_start(history, walk, frame, index, enter):
    """The start of the run of ``frame`` holding ``index``, or of the calling line when it is the prologue."""
    start, before, entered = walk.run(index + 1, frame, history.line_at(index), first=index)
    if entered is not None:
        return Movement(entered)
    if walk.left_through_entry(before, frame):  # the line before is the prologue: on to the caller
        return _calling_line(history, before, enter)
    return walk.stop(start)


def _switched_back(history, frame, stopped):
    """``(frame, call)`` when ``frame`` goes on with a frame that switched context away at ``call`` and the
    walk back stopped at ``frame``'s start: the line before is that call's (swapcontext's) line."""
    forest = history.map.forest
    if stopped != int(forest.first[frame]) - 1 or not switched(history.map, frame):
        return None
    suspended = resumed_call(history, frame)
    if suspended is None:
        return None
    return int(forest.parent[suspended]), call_item(history, suspended)


def _calling_line(history, index, enter):
    """The start of the line run holding ``index`` (a call instruction, or where a handler interrupted);
    ``index`` itself in code without line information, where GDB stops at once."""
    line = history.line_at(index)
    if line is None:
        return Movement(index)
    frame = history.map.frame_row(index)
    walk = _Walk(history, enter)
    start, _, entered = walk.run(index + 1, frame, line, first=index)
    return Movement(entered) if entered is not None else walk.stop(start)


class _Walk:
    """Walks back over one line run of a frame, skipping or entering the calls made inside it."""

    def __init__(self, history, enter):
        self.history, self.enter, self.gap = history, enter, None

    def run(self, position, frame, line, first=None):
        """``(the run's first index, where the walk stopped, where an entered call stopped or None)``.

        The run of ``line`` in ``frame`` ends just before ``position``; ``first`` is already known to be in it."""
        history, frames = self.history, self.history.map
        start = position if first is None else first
        index = start - 1
        while index >= 0:
            if frames.is_gap(index):
                self.gap = frames.item(index)
                break
            row = frames.frame_row(index)
            if row != frame:
                if not inside(frames, row, frame):
                    break  # back through this frame's entry
                child = frames.child_at(frame, index)
                call = call_item(history, child)
                if call < 0:  # the call is not in the trace: nothing of this line before it is known
                    before = int(frames.forest.first[child]) - 1
                    self.gap = frames.item(before) if before >= 0 and frames.is_gap(before) else None
                    break
                if history.line_at(call) != line:
                    break  # a call the line before made
                if self.enter and history.line_at(index) is not None:
                    inner_start, _, entered = self.run(index + 1, row, history.line_at(index), first=index)
                    return start, index, entered if entered is not None else inner_start
                index = call
            elif history.line_at(index) != line:
                break
            start = index
            index -= 1
        return start, index, None

    def left_through_entry(self, index, frame):
        frames = self.history.map
        if index < 0 or self.gap is not None:
            return False
        row = frames.frame_row(index)
        return row != frame and not inside(frames, row, frame)

    def stop(self, start):
        return Movement(start, stopped_message(self.gap) if self.gap is not None and start > 0 else None)
