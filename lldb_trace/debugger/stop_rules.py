"""When a recorded command stops: the rules of continue, next, step and finish, judged after every step.

The software recorder moves the thread itself (recording_plan.py), so it
must stop where LLDB's own command would: at an enabled breakpoint location,
at a new source line (next: in the same or an outer frame; step: past a
function's prologue), or back in the caller (finish).
"""


class StopRule:
    """Where a command stops, judged after every step of the thread."""

    def __init__(self, mode, thread):
        self.mode = mode
        frame = thread.GetFrameAtIndex(0)
        self.start_cfa = frame.GetCFA()
        self.start_line = line_of(frame)
        caller = thread.GetFrameAtIndex(1)
        self.return_address = caller.GetPC() if caller.IsValid() else None
        target = thread.GetProcess().GetTarget()
        self.breakpoints = {  # address -> "ID.LOCATION", as LLDB names a stop there
            location.GetLoadAddress(): f"{breakpoint.GetID()}.{location.GetID()}"
            for breakpoint in target.breakpoint_iter()
            if breakpoint.IsEnabled()
            for location in breakpoint
            if location.IsEnabled()
        }
        self.watched = frozenset({*self.breakpoints, *([self.return_address] if mode == "finish" else [])})
        self.reason = ""

    def at_breakpoint(self, pc):
        if pc in self.breakpoints:
            self.reason = f"breakpoint {self.breakpoints[pc]}"
            return True
        return False

    def should_stop(self, frame, pc):
        if self.at_breakpoint(pc):
            return True
        if self.mode == "continue":
            return False
        if self.mode == "finish":
            if pc == self.return_address and frame.GetCFA() > self.start_cfa:
                self.reason = "step out"
                return True
            return False
        line = line_of(frame)
        if line is None or line == self.start_line:
            return False
        if self.mode == "step" and not in_prologue(frame, pc):
            self.reason = "step in"
            return True
        if self.mode == "next" and frame.GetCFA() >= self.start_cfa:
            self.reason = "step over"
            return True
        return False


def in_prologue(frame, pc):
    """Whether ``pc`` is in its function's prologue, which LLDB's step-in steps through to the body."""
    function = frame.GetFunction()
    if not function.IsValid():
        return False
    start = function.GetStartAddress().GetLoadAddress(frame.GetThread().GetProcess().GetTarget())
    return start <= pc < start + function.GetPrologueByteSize()


def line_of(frame):
    """``(file, line)`` of the frame's pc, or None where it has no line information."""
    line_entry = frame.GetLineEntry()
    if not line_entry.IsValid() or not line_entry.GetLine():
        return None
    return (line_entry.GetFileSpec().fullpath, line_entry.GetLine())
