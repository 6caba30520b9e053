"""LLDB's own unwinding checked against the trace's calls, at each position where LLDB unwinds the stack.

Where every register is known (a core, a recorder's states), a thread's
frames are LLDB's own unwinding, so that outer frames have their registers
(shown_state.py).  LLDB keeps state across stops that can mislead it: after a
position where a function's frame showed its variables without the
registers to unwind it, a later position in the same function got a wrong
frame address, a caller standing at frame 0's pc, and locals read from the
wrong place.  The trace knows where each frame goes on (its call's return
address): where LLDB's frames are not there, the position is shown with the
trace's frames, as where registers are missing.
"""

import weakref

from . import histories

# ProcessTrace -> {(tid, position)} LLDB unwound wrongly; forgotten with the trace (an id() a later one may reuse)
_refused: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def refused(trace, tid, position):
    """Whether LLDB's unwinding at thread ``tid``'s ``position`` disagreed with the trace (check)."""
    return (tid, position) in _refused.get(trace, ())


def disagrees(target, tid):
    """Whether the frames LLDB unwound for thread ``tid`` of ``target`` do not go on where the trace's calls do; if
    so the position is refused, and shown with the trace's frames once LLDB asks again."""
    trace = histories.trace_of(target)
    history = histories.history_of(target, tid, trace)
    thread = target.GetProcess().GetThreadByID(tid)
    frames = [thread.GetFrameAtIndex(k) for k in range(thread.GetNumFrames())]
    unwound = _standing(frames)
    given = [pc for _frame, pc in histories.shown_frames(target, history)]
    if len(unwound) < 2 or unwound[: len(given)] == given[: len(unwound)]:  # the trace's own frames
        return False
    expected = [frame.resumes_at for frame in history.frames()]
    for lldb_pc, trace_pc in zip(unwound, expected, strict=False):
        if trace_pc is None:
            break
        if lldb_pc != trace_pc:
            _refused.setdefault(trace, set()).add((tid, history.position))
            return True
    return False


def _standing(frames):
    """Where each function's frame stands: the pc of the innermost frame of each run of inlined frames and the
    frame they are inlined into (LLDB gives the outer ones of a run the inlined call's site)."""
    found, starts = [], True
    for frame in frames:
        if starts:
            found.append(frame.GetPC())
        starts = not frame.IsInlined()
    return found
