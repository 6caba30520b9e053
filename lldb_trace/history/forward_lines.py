"""``step`` and ``next`` forwards through history, as GDB steps a live process.

GDB keeps stepping while the pc stays in the line table row it started in, and
stops when it reaches the first instruction of a row of another line (a jump
into the middle of a row does not stop it: it goes on from there as if that
line had been the current one).  Calls made by the stepping frame are stepped
over (``next``, or a callee without line information) or entered (``step``,
stopping after the callee's prologue).  When the frame returns, GDB goes on in
the caller the same way: it stops at once if the return address begins a row
of another line (a call's "return point" row), else at the caller's next line;
a caller without line information is a stop too.  A function without line
information is stepped "until exit from function".

A call left by a jump past its return (longjmp, a C++ throw) ends the step
where the jump lands, as GDB's longjmp and exception breakpoints make it do.
A call that switched to another context (swapcontext) is stepped over until
its frame runs again; a switch into another context (from inside swapcontext)
is arriving in another frame, no call.  Rows are read from the modules' DWARF
as GDB keeps them (dwarf_lines.py); where a row is unknown, every change of
line is a stop.
"""

from . import frame_walk
from .frame_walk import inside, left_non_locally, row_at
from .gaps import stopped_message
from .movement import NO_MORE_HISTORY, Movement

_ENDBR64 = b"\xf3\x0f\x1e\xfa"
_FRAME_SETUP = (b"\x55\x48\x89\xe5", b"\x55\x48\x8b\xec")  # push %rbp; mov %rsp,%rbp


def forward_line(history, enter):
    """Where ``step`` (``enter``) or ``next`` from the position stops."""
    position, end = history.position, history.end
    if position == end:
        return Movement(end, NO_MORE_HISTORY)
    frame, address = row_at(history, position), history.pc_at(position)
    line = history.line_of(address)
    row = history.row_start(address)  # the row being stepped through (None: the whole function, without lines)
    current = position
    while True:
        following = current + 1
        if following == end:
            return Movement(end)
        frames = history.map
        if frames.is_gap(following):
            return Movement(current, stopped_message(frames.item(following)))
        inner = frames.frame_row(following)
        if inner == frame:
            address = frames.address(following)
            if line is not None:
                stop, line, row = _arrive(history, address, line, row)
                if stop:
                    return Movement(following)
            current = following
        elif inside(frames, inner, frame) and not frame_walk.switched(frames, frames.child_at(frame, following)):
            child = frames.child_at(frame, following)
            stop = after_prologue(history, child) if enter else None
            if stop is not None:
                return Movement(stop)
            if left_non_locally(frames, child):
                resumed = frame_walk.resumption(history, child)
                if resumed is None:  # the call jumped out past this frame: the step ends where it landed
                    return Movement(int(frames.forest.last[child]) + 1)
                frame, current = int(resumed), int(frames.forest.first[resumed]) - 1
                continue
            current = int(frames.forest.last[child])
        elif left_non_locally(frames, frame) and not inside(frames, inner, frame):  # jumped out: it ends there
            return Movement(following)
        else:  # returned, or switched context: on in that frame, unless arriving there ends the step
            address = frames.address(following)
            caller_line = history.line_of(address)
            if caller_line is None or (_row_begins(history, address) and caller_line != line):
                return Movement(following)
            frame, line, row, current = inner, caller_line, history.row_start(address), following


def _arrive(history, address, line, row):
    """``(stop, line, row)`` after the frame's next instruction at ``address``, stepping ``line`` in ``row``."""
    start = history.row_start(address)
    if start is not None and start == row:
        return False, line, row
    seen = history.line_of(address)
    if seen is None:
        return True, line, row
    if (start is None or start == address) and seen != line:
        return True, line, row
    return False, seen, start  # the middle of another line's row, or the same line again: step on through it


def _row_begins(history, address):
    start = history.row_start(address)
    return start is None or start == address


def after_prologue(history, row):
    """Where ``step`` into call ``row`` stops: after the prologue of a function with line information, or None."""
    entry = int(history.map.forest.entry[row])
    if not entry or history.line_of(entry) is None:
        return None  # no line information: stepped over
    target = prologue_stop(history, entry)
    if target is None:
        return None
    for index, address in frame_walk.own_items(history, row, int(history.map.forest.first[row])):
        if address == target:
            return index
    return None


def prologue_stop(history, entry):
    """Where GDB's ``step`` (and ``break FUNCTION``) stops in the function at ``entry`` (GCC code, x86-64).

    GDB reads the prologue of GCC code itself: after ``push %rbp; mov %rsp,%rbp`` (an ``endbr64``
    first is skipped), and on to the end of that line-table row; a function without that frame
    setup (optimized code) stops at its first instruction."""
    code = history.thread.module_bytes.read(entry, 8) or b""
    start = len(_ENDBR64) if code.startswith(_ENDBR64) else 0
    if code[start : start + 4] not in _FRAME_SETUP:
        return entry
    after = entry + start + 4
    if history.row_start(after) == after:
        return after
    return history.symbolizer.prologue_end(entry) or after
