"""What LLDB showed, read back: the instruction lines of a dump, the positions movements report, the frames."""

import re

INSTRUCTION = re.compile(r"^  \[(\d+)\] 0x([0-9a-f]+)")
POSITION = re.compile(r"Position: (?:instruction (\d+) of \d+|end of history)")


def listed(text):
    """``[(index, address)]`` of the instruction lines of a text dump."""
    return [(int(m[1]), int(m[2], 16)) for m in map(INSTRUCTION.match, text.splitlines()) if m]


def position_after(output):
    """The position a movement reports (None: the end)."""
    found = POSITION.findall(output)
    assert found, output
    return int(found[-1]) if found[-1] else None


def positions(output):
    """Every instruction position the movements in ``output`` reported, in order (the end of history left out)."""
    return [int(line.split()[2]) for line in output.splitlines() if line.startswith("Position: instruction")]


def frames(session):
    """``(function, file:line or None)`` of each frame of the selected thread, innermost first."""
    thread = session.target.GetProcess().GetSelectedThread()
    shown = []
    for frame in thread:
        line = frame.GetLineEntry()
        where = f"{line.GetFileSpec().GetFilename()}:{line.GetLine()}" if line.IsValid() and line.GetLine() else None
        shown.append((frame.GetFunctionName(), where))
    return shown
