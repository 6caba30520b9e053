"""``register read`` on a trace: the registers not known at a position named as such, and an outer frame's.

At a position in history frame 0 shows the registers whose values are known
there (debugger/register_layout.py); LLDB would call any other one an invalid
register name, so the override lists them as not known at this position (and
a named one gets that error).  LLDB gives an outer frame of a ScriptedProcess
no registers of its own: it answers with frame 0's when the frame runs the
same function (frames without stack addresses look the same to LLDB), and
"invalid frame" otherwise.  So in an outer frame of the trace's calls the
override says what is known instead: where that frame resumes.  Where LLDB
unwinds the frames itself (a core's state at the end) its command runs.
"""

import re
import shlex

from ..debugger import histories
from ..debugger.register_layout import FLOATING_SET, GENERAL_SET, GENERIC_NAMES, X86_REGISTER_NAMES
from ..errors import LldbTraceError
from ..values.machine_state import TRACKED
from .base import lldbs_own

_EMPTY_SET = re.compile(r"^[^\n]* Registers:\n(?:\n|$)", re.MULTILINE)  # a set's heading, and no register
_running = []  # non-empty while LLDB's own command runs inside the override


def install(debugger):
    debugger.GetCommandInterpreter().SetCommandOverrideCallback("register read", _override(debugger))


def _override(debugger):
    def override(*argv):
        if _running:
            return False
        try:
            text = outer_frame_registers(debugger)
            if text is None:
                return _unknown_registers(debugger, list(argv[2:]))
        except LldbTraceError as error:
            text = f"error: {error}"
        output = debugger.GetErrorFile()
        output.Write(f"{text}\n".encode())
        output.Flush()
        return True

    return override


def _unknown_registers(debugger, arguments):
    """At frame 0 in history: LLDB's answer for the known registers, "not known" for the rest (True: done)."""
    target = debugger.GetSelectedTarget()
    every = arguments in (["-a"], ["--all"])
    if not histories.shows_history(target) or (any(word.startswith("-") for word in arguments) and not every):
        return False
    frame = target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
    known = {register.GetName() for group in frame.GetRegisters() for register in group}
    names = [] if every else shlex.split(" ".join(arguments))
    known |= {alias for alias, name in GENERIC_NAMES.items() if name in known}
    register_names = X86_REGISTER_NAMES | GENERIC_NAMES.keys()
    unknown = [name for name in (names or GENERAL_SET) if name.lstrip("$") in register_names - known]
    if not known or (known.issuperset(TRACKED) and not (names and unknown)):
        return False  # every register the values know of is (a core's, a recorder's state): LLDB's own command
    if every:
        return _every_register(debugger, known)
    asked = [name for name in names if name not in unknown]  # LLDB answers: the values, or "Invalid register name"
    if names and not unknown:
        return False
    result = lldbs_own(debugger, " ".join(["register read", *asked]), _running) if asked or not names else None
    output = debugger.GetOutputFile()
    if result is not None:
        output.Write(result.GetOutput().encode())
        debugger.GetErrorFile().Write(result.GetError().encode())
    if not names:
        output.Write(f"not known at this position: {', '.join(unknown)}\n".encode())
    else:
        errors = debugger.GetErrorFile()
        for name in unknown:
            errors.Write(f"error: {name} is not known at this position\n".encode())
        errors.Flush()
    output.Flush()
    return True


def _every_register(debugger, known):
    """``register read --all``: LLDB's sets, less the headings of those with no register known, and the registers
    not known named (LLDB would list the empty sets' headings alone)."""
    result = lldbs_own(debugger, "register read --all", _running)
    unknown = [name for name in GENERAL_SET if name not in known]
    floating = [name for name in FLOATING_SET if name not in known]
    unknown += ["the floating point registers"] if len(floating) == len(FLOATING_SET) else floating
    output = debugger.GetOutputFile()
    output.Write(_EMPTY_SET.sub("", result.GetOutput()).encode())
    output.Write(f"not known at this position: {', '.join(unknown)}\n".encode())
    output.Flush()
    return True


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
