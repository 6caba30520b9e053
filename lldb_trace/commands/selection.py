"""Which trace and which threads a ``pt`` command works on: the command's target's, and its -t TIDs.

Every command that reads a trace (dump, export, profile, script, save) asks
here, so that a target without a trace, or a tid the trace lacks, fails with
the same one-line error whatever the command.
"""

from ..debugger import registry
from ..errors import LldbTraceError


class NoTraceError(LldbTraceError):
    """The selected target was not loaded from a trace."""


def selected_trace(debugger, exe_ctx):
    """The ProcessTrace of the command's target, or a one-line error saying how to get one."""
    target = exe_ctx.GetTarget() if exe_ctx.GetTarget().IsValid() else debugger.GetSelectedTarget()
    if not target.IsValid():
        raise NoTraceError("no target: load a trace with 'trace load BUNDLE'")
    process_trace = registry.for_target(target)
    if process_trace is None:
        index = debugger.GetIndexOfTarget(target)
        why = registry.why_dropped(target) or "load one with 'trace load BUNDLE'"
        raise NoTraceError(f"target #{index} has no trace: {why}")
    return target, process_trace


def chosen_tids(process_trace, target, tids):
    """``tids`` checked against the trace, or the selected thread's tid when none were given."""
    if tids:
        for tid in tids:
            process_trace.thread(tid)  # raises for a tid the trace lacks
        return list(dict.fromkeys(tids))
    thread = target.GetProcess().GetSelectedThread()
    return [thread.GetThreadID()] if thread.IsValid() else process_trace.tids[:1]
