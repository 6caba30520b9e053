"""Which history a command moves: the selected thread's, in the trace its target holds.

A loaded trace (a ScriptedProcess target), a live process traced with ``pt
start`` (or stopped after ``pt stop``) and the history view of a live
process (history_view.py) all hold a ProcessTrace in the registry; each
traced thread's ThreadHistory (lldb_trace.history) keeps its position
between commands, and reads lines and prologues through LLDB.
"""

import itertools

import lldb

from .. import history
from ..errors import LldbTraceError
from . import registry
from .symbolizer import LldbSymbolizer, disassembly_flavor


class NotTracedError(LldbTraceError):
    """The target, or the thread, has no trace to move in."""


def trace_of(target):
    """The ProcessTrace ``target`` holds; NotTracedError (saying why) when it holds none."""
    if not target.IsValid():
        raise NotTracedError("no target: load a trace ('trace load BUNDLE') or record one ('pt start')")
    trace = registry.for_target(target)
    if trace is None:
        why = registry.why_dropped(target)
        raise NotTracedError(why or "the selected target is not traced: 'trace load BUNDLE' or 'pt start' first")
    return trace


def shows_history(target):
    """Whether ``target``'s threads stand in their history: a loaded trace, or a live process's history view."""
    return target.IsValid() and target.GetProcess().GetPluginName() == "ScriptedProcess" and bool(trace_or_none(target))


def trace_or_none(target):
    return registry.for_target(target) if target.IsValid() else None


def history_of(target, tid, trace=None):
    """The ThreadHistory of thread ``tid`` of ``target`` (made on first use, kept while its trace is unchanged)."""
    trace = trace or trace_of(target)
    if tid not in trace.tids:
        raise NotTracedError(f"thread {tid} is not traced (traced threads: {', '.join(map(str, trace.tids))})")
    return history.for_thread(
        trace, tid, lambda: LldbSymbolizer(target, trace.memory, disassembly_flavor(target.GetDebugger()))
    )


def history_position(target, tid):
    """The session info's position of ``tid``: its history's index, or None (the end) when it has none yet."""
    trace = trace_or_none(target)
    if trace is None or tid not in trace.tids or trace.forest_if_built(tid) is None:
        return None
    return history_of(target, tid, trace).position


def selected_thread(debugger):
    """``(target, thread)``: the selected thread of a stopped process of the selected target."""
    target = debugger.GetSelectedTarget()
    trace_of(target)
    process = target.GetProcess()
    if not process.IsValid() or process.GetState() != lldb.eStateStopped:
        raise NotTracedError("the process is not stopped: stop it (process interrupt) before moving in its history")
    thread = process.GetSelectedThread()
    if not thread.IsValid():
        raise NotTracedError("no thread is selected: 'thread select N' first")
    return target, thread


_views = []  # (history view target, the live target it shows the past of): see history_view.py


def add_view(view, live):
    _views.append((view, live))


def remove_view(view):
    _views[:] = [(candidate, live) for candidate, live in _views if candidate != view]


def view_of(live):
    """The history view showing ``live``'s past, or None."""
    return next((view for view, candidate in _views if candidate == live and view.IsValid()), None)


def live_of(view):
    """The live target whose past ``view`` shows, or None when ``view`` is no history view."""
    return next((live for candidate, live in _views if candidate == view), None)


def breakpoint_locations(target):
    """Enabled breakpoint locations: load address -> "ID.LOCATION", as LLDB names a stop there.

    A history view stops at the breakpoints of the live process it shows, and at its own.
    """
    locations = {}
    live = live_of(target)
    for holder in [target] + ([live] if live is not None and live.IsValid() else []):
        for breakpoint in holder.breakpoint_iter():
            if not breakpoint.IsEnabled():
                continue
            for location in breakpoint:
                address = location.GetLoadAddress()
                if location.IsEnabled() and address != lldb.LLDB_INVALID_ADDRESS:
                    locations.setdefault(address, f"{breakpoint.GetID()}.{location.GetID()}")
    return locations


def shown_pcs(thread_history):
    """The pcs LLDB shows for the frames at the position: frame 0 where it stands, each outer frame at its call.

    LLDB symbolicates a frame it is given at exactly its pc, so an outer frame given its return address
    would show the line after the call; at the call instruction it shows the calling line, as GDB and
    LLDB's own unwinder do.  (A frame a signal interrupted is shown where it was interrupted.)
    """
    frames = thread_history.frames()
    pcs = [frames[0].pc]
    for inner, outer in itertools.pairwise(frames):
        call = None if inner.asynchronous else _call_instruction(thread_history, inner)
        pcs.append(call if call is not None else outer.pc)
    return frames, pcs


def _call_instruction(thread_history, frame):
    """The address of the call that made ``frame`` (None when the trace does not hold it)."""
    if frame.row is None:  # stopped at the callee's first instruction: the last item was the call
        item = thread_history.end - 1 if thread_history.end else None
    else:
        item = thread_history.map.forest.call_item(frame.row)
    return thread_history.map.address(item) if item is not None and item >= 0 else None
