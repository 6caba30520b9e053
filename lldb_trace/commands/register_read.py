"""``register read`` in an outer frame of a trace: an error naming what the trace knows, not frame 0's registers.

A trace knows one register, frame 0's pc.  LLDB gives an outer frame of a
ScriptedProcess no registers of its own: it answers with frame 0's when the
frame runs the same function (frames without stack addresses look the same
to LLDB), and "invalid frame" otherwise.  So in an outer frame of a trace
the override says what is known instead: where that frame resumes.
"""

from ..debugger import histories
from ..errors import LldbTraceError


def install(debugger):
    debugger.GetCommandInterpreter().SetCommandOverrideCallback("register read", _override(debugger))


def _override(debugger):
    def override(*_argv):
        try:
            text = outer_frame_registers(debugger)
        except LldbTraceError as error:
            text = f"error: {error}"
        if text is None:
            return False  # frame 0, or not a trace: LLDB's own command runs
        output = debugger.GetErrorFile()
        output.Write(f"{text}\n".encode())
        output.Flush()
        return True

    return override


def outer_frame_registers(debugger):
    """The error ``register read`` gives in an outer frame of a trace; None where LLDB's own answer is right."""
    target = debugger.GetSelectedTarget()
    if not histories.shows_history(target):
        return None
    thread = target.GetProcess().GetSelectedThread()
    index = thread.GetSelectedFrame().GetFrameID() if thread.IsValid() else 0
    if index == 0:
        return None
    shown = histories.shown_frames(target, histories.history_of(target, thread.GetThreadID()))
    given = sum(thread.GetFrameAtIndex(k).IsSynthetic() for k in range(index + 1)) - 1  # LLDB adds inlined callers
    if given <= 0:
        return None  # frame 0, or a function it is inlined into: frame 0's registers are right
    resumes = f": it resumes at 0x{shown[given][0].resumes_at:x}" if given < len(shown) else ""
    return (
        f"error: frame #{index} has no registers in a trace, which records only frame #0's pc{resumes}"
        " ('frame select 0' for the pc)"
    )
