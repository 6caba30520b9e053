"""Which history a command moves: the selected thread's, in the trace its target holds.

A loaded trace (a ScriptedProcess target), a live process traced with ``pt
start`` (or stopped after ``pt stop``) and the history view of a live
process (history_view.py) all hold a ProcessTrace in the registry; each
traced thread's ThreadHistory (lldb_trace.history) keeps its position
between commands, and reads lines and prologues through LLDB.
"""

import re

import lldb

from .. import history
from ..errors import LldbTraceError
from ..history import named_calls
from . import registry
from .symbolizer import LldbSymbolizer, disassembly_flavor

_NO_RANGE = 0xFFFFFFFF  # SBBlock.GetRangeIndexForBlockAddress: no range of the block holds the address


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
        trace, tid, lambda: LldbSymbolizer(target, trace.module_bytes, disassembly_flavor(target.GetDebugger()))
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
    if process.IsValid() and process.GetState() == lldb.eStateExited:
        raise NotTracedError(
            f"process {process.GetProcessID()} has exited: its trace stays readable ('trace dump'); 'trace save PATH'"
            " it, then 'trace load PATH' to move through its history"
        )
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


def breakpoint_locations(target, thread_history):
    """Enabled breakpoint locations: load address -> "ID.LOCATION", as LLDB names a stop there.

    A history view stops at the breakpoints of the live process it shows, and at its own.  A location
    LLDB left on an IFUNC's resolver (it cannot run it) stands for the functions the name leads to in
    ``thread_history`` (history.named_calls).
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
    return named_calls.resolve_breakpoints(thread_history.map.forest, thread_history.symbolizer, locations)


def shown_frames(target, thread_history):
    """``[(Frame, pc LLDB is given)]`` at the position, innermost first; a frame whose call a gap lost is left out.

    LLDB symbolicates a scripted frame at exactly its pc: an outer frame stands at its call instruction
    (history.Frame), so LLDB names the calling line.  LLDB 23 also adds the callers of inlined code to
    each frame, looking them up at an outer frame's pc less one (as for a return address); where the call
    begins the inlined code (``elf_ifunc_invoke`` inlined into ``_dl_fixup``), that falls outside it and
    the function it is inlined into would vanish from ``bt``: such a frame is given one byte into its
    call instead, where both lookups find the call.
    """
    shown = []
    for frame in thread_history.frames():
        if frame.pc is None:
            continue
        pc = frame.pc
        if shown and not _inlined_code_holds(target, pc, pc - 1) and thread_history.map.instruction_size(pc) > 1:
            pc += 1
        shown.append((frame, pc))
    return shown


def shown_frame_count(target, shown):
    """How many frames ``bt`` lists for ``shown`` (see shown_frames): LLDB 23 and later add a frame for each
    function that inlined code is inlined into (llvm PR 191132); LLDB 22 shows each frame it is given as
    its innermost inlined function alone."""
    if not _adds_inlined_callers():
        return len(shown)
    return sum(1 + _inlined_depth(target, pc) for _frame, pc in shown)


def unwound_frame_count(target, shown):
    """How many frames ``bt`` lists for ``shown`` where LLDB unwinds the stack itself (every register known
    there): each frame and the functions its code is inlined into, an outer frame looked up at its return
    address less one, in LLDB 22 as in 23."""
    return sum(
        1 + _inlined_depth(target, pc if index == 0 else frame.resumes_at - 1)
        for index, (frame, pc) in enumerate(shown)
    )


def _adds_inlined_callers():
    found = re.search(r"version (\d+)", lldb.SBDebugger.GetVersionString() or "")
    return found is not None and int(found.group(1)) >= 23


def _inlined_block(target, address):
    return target.ResolveLoadAddress(address).GetBlock().GetContainingInlinedBlock()


def _inlined_code_holds(target, pc, lookup):
    """Does the inlined code around ``pc`` (if any) hold ``lookup`` too?"""
    inlined = _inlined_block(target, pc)
    return not inlined.IsValid() or inlined.GetRangeIndexForBlockAddress(target.ResolveLoadAddress(lookup)) != _NO_RANGE


def _inlined_depth(target, pc):
    """How many inlined functions nest at ``pc``."""
    depth, inlined = 0, _inlined_block(target, pc)
    while inlined.IsValid():
        depth += 1
        inlined = inlined.GetParent().GetContainingInlinedBlock()
    return depth
