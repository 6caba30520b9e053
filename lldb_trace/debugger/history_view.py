"""Showing a thread's new history position through LLDB's own commands, never touching a live process.

A loaded trace's ScriptedProcess reads each thread's position when LLDB asks
for its threads and frames (scripted_process.py); resuming it synchronously
makes LLDB ask again, so ``bt``, ``frame select``, ``register read``,
``source list``... describe the new position.

A live process cannot be shown in the past that way: LLDB reads a live
thread's registers, locals and memory from the process itself, so even with
its frames replaced (a scripted frame provider) ``register read``, ``p $pc``
or ``image lookup -a $pc`` would report the present.  So while a live thread
stands in the past, the selected target is a *history view*: a second target
over the same live trace, built like a loaded trace's (pc as the only
register, module memory only, locals unavailable).  Reaching the end of
history (``pt goto end``, stepping forward onto it) selects the live target
again and deletes the view; the live process is never resumed, written or
read for a movement.
"""

import lldb

from ..errors import LldbTraceError
from . import histories, postmortem, registry, unwind_check


class HistoryViewError(LldbTraceError):
    """LLDB refused to show a position."""


def show(debugger, target, tid, at_end):
    """Show thread ``tid`` of ``target`` at its (new) position; the thread now shown (an SBThread)."""
    live = histories.live_of(target)
    if live is not None:  # a history view
        if at_end:
            close(debugger, target)
            return _select(debugger, live, tid)
        refresh(debugger, target)
        return _select(debugger, target, tid)
    if target.GetProcess().GetPluginName() == "ScriptedProcess":  # a loaded trace
        refresh(debugger, target)
        if unwind_check.disagrees(target, tid):  # shown again with the trace's frames
            refresh(debugger, target)
        return _select(debugger, target, tid)
    if at_end:  # a live process at the present: nothing was ever replaced
        return _select(debugger, target, tid)
    view = histories.view_of(target)
    if view is not None:
        close(debugger, view)  # made for an earlier stop of the live process: start afresh
    view, key = postmortem.history_view_target(debugger, histories.trace_of(target))
    histories.add_view(view, target)
    _keys[view.GetProcess().GetUniqueID()] = key
    refresh(debugger, view)  # its stop reasons name the live target's breakpoints, known from now on
    return _select(debugger, view, tid)


_keys = {}  # a view's process unique id -> its registry key


def close(debugger, view):
    """Delete a history view (and its registration); the live target it showed stays as it is."""
    histories.remove_view(view)
    registry.remove(_keys.pop(view.GetProcess().GetUniqueID(), None))
    debugger.DeleteTarget(view)


def refresh(debugger, target):
    """Make LLDB read the threads and frames of a trace's ScriptedProcess again (a synchronous resume)."""
    process = target.GetProcess()
    was_async = debugger.GetAsync()
    debugger.SetAsync(False)
    try:
        error = process.Continue()
    finally:
        debugger.SetAsync(was_async)
    if error.Fail() or process.GetState() != lldb.eStateStopped:
        raise HistoryViewError(
            f"LLDB could not show the new position: {error.GetCString() or 'the process did not stop'}"
        )


def _select(debugger, target, tid):
    debugger.SetSelectedTarget(target)
    process = target.GetProcess()
    thread = process.GetThreadByID(tid)
    if thread.IsValid():
        process.SetSelectedThread(thread)
    return thread
