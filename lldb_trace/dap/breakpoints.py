"""Breakpoints from DAP: ordinary LLDB breakpoints, which ``pt continue`` and ``pt reverse-continue`` stop at.

Each ``setBreakpoints`` replaces the breakpoints the client set in that
source, each ``setFunctionBreakpoints`` all function breakpoints; breakpoints
made in the console stay.  The DAP id of a breakpoint is LLDB's breakpoint
number, which the ``stopped`` event's ``hitBreakpointIds`` gives back.  A
line in a file the client names by a path where it was not built (a checkout
elsewhere) is found by the file's name, as ``breakpoint set -f NAME -l N``
does.  Conditions, hit counts and log messages are not evaluated in a
trace: a breakpoint asking for one is refused, never silently unconditional.
"""

from pathlib import PurePath

from .arguments import RequestError

_UNSUPPORTED = ("condition", "hitCondition", "logMessage")
MAX_BREAKPOINTS = 10_000  # in one request: more is no editor's doing


def set_breakpoints(session, arguments):
    target = session.target()
    source = arguments.object("source")
    path = source.string("path", None) or source.string("name")
    wanted = _at_most(arguments.objects("breakpoints", None))
    lines = [item.line("line", session.lines_from) for item in wanted]
    for number in session.source_breakpoints.pop(path, []):
        target.BreakpointDelete(number)
    shown, made = [], []
    for item, line in zip(wanted, lines, strict=True):
        refused = _refused(item)
        if refused:
            shown.append({"verified": False, "line": line - 1 + session.lines_from, "message": refused})
            continue
        breakpoint = target.BreakpointCreateByLocation(path, line)
        if not breakpoint.GetNumLocations():
            target.BreakpointDelete(breakpoint.GetID())
            breakpoint = target.BreakpointCreateByLocation(PurePath(path).name, line)
        made.append(breakpoint.GetID())
        shown.append(_shown(session, breakpoint, f"no code for {PurePath(path).name}:{line} in the traced modules"))
    session.source_breakpoints[path] = made
    return {"breakpoints": shown}


def set_function_breakpoints(session, arguments):
    target = session.target()
    wanted = _at_most(arguments.objects("breakpoints"))
    names = [item.string("name") for item in wanted]
    for number in session.function_breakpoints:
        target.BreakpointDelete(number)
    session.function_breakpoints, shown = [], []
    for item, name in zip(wanted, names, strict=True):
        refused = _refused(item)
        if refused:
            shown.append({"verified": False, "message": refused})
            continue
        breakpoint = target.BreakpointCreateByName(name)
        session.function_breakpoints.append(breakpoint.GetID())
        shown.append(_shown(session, breakpoint, f"no function named '{name[:80]}' in the traced modules"))
    return {"breakpoints": shown}


def set_exception_breakpoints(session, arguments):
    """A trace records no exceptions as such: the filters offered are none, and none may be asked for."""
    if arguments.strings("filters", None) or arguments.objects("filterOptions", None):
        raise RequestError("a trace has no exception breakpoints (lldb-trace dap offers no filters)")
    return {"breakpoints": []}


def _at_most(wanted):
    if len(wanted) > MAX_BREAKPOINTS:
        raise RequestError(f"{len(wanted)} breakpoints in one request: at most {MAX_BREAKPOINTS}")
    return wanted


def _refused(item):
    asked = [name for name in _UNSUPPORTED if name in item]
    if not asked:
        return None
    return f"{' and '.join(asked)} not supported on a trace: set the breakpoint without it"


def _shown(session, breakpoint, missing):
    """A DAP Breakpoint: verified where LLDB found code, at the line its first location is on."""
    shown = {"id": breakpoint.GetID(), "verified": breakpoint.GetNumLocations() > 0}
    if not shown["verified"]:
        return {**shown, "message": missing}
    entry = breakpoint.GetLocationAtIndex(0).GetAddress().GetLineEntry()
    if entry.IsValid() and entry.GetLine() > 0:
        path = entry.GetFileSpec().fullpath
        shown["line"] = entry.GetLine() - 1 + session.lines_from
        if path:
            shown["source"] = {"name": PurePath(path).name, "path": path}
    return shown


HANDLERS = {
    "setBreakpoints": set_breakpoints,
    "setFunctionBreakpoints": set_function_breakpoints,
    "setExceptionBreakpoints": set_exception_breakpoints,
}
