"""A traced live process: its capture backend, its trace, and the stop hook that reads Intel PT buffers.

``pt start`` creates a LiveSession: the backend (capture/live_software/backend.py
or capture/intel_pt/backend.py), told how to read the process through LLDB,
and a ProcessTrace whose source is that backend (sources/live.py), registered
for the target so the dumps and ``trace save`` find it.  ``pt stop`` freezes
the source and keeps the trace until the process runs on untraced.
"""

import contextlib
import re
from dataclasses import replace
from pathlib import Path

import lldb

from ..bundle.model import Bundle, Process, Thread, ThreadStop
from ..capture.encoder.thread_recorder import circular_psb_period
from ..capture.intel_pt.backend import IntelPtBackend
from ..capture.live_software.backend import SoftwareBackend
from ..capture.process_view import children_of
from ..errors import LldbTraceError
from ..process_trace import ProcessTrace
from ..sources import LiveSource, live_module
from . import registry
from .interpreter import run_command

KEEP_ADDRESSES = False  # keep every recorded address (tests compare them with the decoded trace): 8 bytes each


class LiveTraceError(LldbTraceError):
    """Tracing cannot start or run as asked."""


def read_memory(process, address, size):
    error = lldb.SBError()
    while size:
        data = process.ReadMemory(address, size, error)
        if error.Success() and data:
            return bytes(data)
        size //= 2
    return b""


def target_modules(target):
    """The target's modules that are ELF files, at the load address of their lowest page."""
    modules = []
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath
        header = module.GetObjectFileHeaderAddress().GetLoadAddress(target)
        if not path or header == lldb.LLDB_INVALID_ADDRESS:
            continue
        built = live_module(path, header, _uuid(module))
        if built is not None:
            modules.append(built)
    return modules


def vdso_span(target):
    """``(start, end)`` of the vdso's pages in the process, or None."""
    for module in target.module_iter():
        if module.GetFileSpec().GetFilename() != "[vdso]":
            continue
        start = module.GetObjectFileHeaderAddress().GetLoadAddress(target)
        ends = [
            section.GetLoadAddress(target) + section.GetByteSize()
            for section in module.section_iter()
            if section.GetLoadAddress(target) != lldb.LLDB_INVALID_ADDRESS
        ]
        if start == lldb.LLDB_INVALID_ADDRESS or not ends:
            return None
        return start, (max(ends) + 0xFFF) & ~0xFFF
    return None


def vdso_image(target):
    """``(load address, bytes)`` of the vdso, read from the process (it has no file), or None."""
    span = vdso_span(target)
    if span is None:
        return None
    start, end = span
    data = read_memory(target.GetProcess(), start, end - start)
    return (start, data) if len(data) == end - start else None


def _uuid(module):
    uuid = module.GetUUIDString()
    return uuid.replace("-", "").lower() if uuid else None


class LiveSession:
    """One traced live process: its backend, its trace (a ProcessTrace over a LiveSource), and the current rule.

    ``rule`` is the StopRule of the recorded command running now (software backend).
    """

    def __init__(self, target, backend, tids):
        self.target = target
        self.backend = backend
        self.tids = tids
        self.rule = None
        self.stop_hook = None  # the id of the stop hook that reads an Intel PT session's buffers
        self.untraced_children = []  # pids of the processes the traced process created: none is traced
        self._register()

    def _register(self):
        process = Process(
            self.target.GetProcess().GetProcessID(),
            self.target.GetTriple(),
            tuple(Thread(tid, None) for tid in self.tids),
            tuple(target_modules(self.target)),
        )
        bundle = Bundle(Path("<live process>"), self.backend.name, self.backend.cpu, (process,))
        target = self.target
        source = LiveSource(self.backend, lambda: _memory_modules(target), lambda tid: _signal_stop(target, tid))
        self.trace = ProcessTrace(bundle, process, source)
        self.key = registry.add(self.target, self.trace, session=self)
        self.child_created()

    def child_created(self, *pids):
        """The traced process created processes ``pids``; the trace's process names every one (untraced children)."""
        self.untraced_children += [pid for pid in pids if pid not in self.untraced_children]
        self.trace.process = replace(self.trace.process, untraced_children=tuple(self.untraced_children))

    def stopped(self):
        """At every stop (intel-pt): trace the threads created since (--all), note the child processes, then read
        the buffers.  A child is seen only if it is alive (or not yet reaped) at a stop, one created before tracing
        began included: LLDB lets children go without a stop the hook would see."""
        if self.backend.all_threads:
            new = [t.GetThreadID() for t in self.target.GetProcess() if t.GetThreadID() not in self.backend.traces]
            for tid in new:
                self.backend.add_thread(tid)
            if new:
                self.tids = sorted(self.backend.traces)
                self._register()  # replaces the registration: the process now has more traced threads
        self.child_created(*children_of(self.target.GetProcess().GetProcessID()))
        self.backend.read_all()

    def close(self):
        registry.remove(self.key)
        self.backend.close()

    def stop(self):
        """``pt stop``: stop recording, keep the trace readable until the process runs on untraced."""
        if self.stop_hook is not None:
            with contextlib.suppress(LldbTraceError):  # already deleted by the user: nothing left to do
                run_command(self.target.GetDebugger(), f"target stop-hook delete {self.stop_hook}")
        self.trace.source.freeze()
        process = self.target.GetProcess()
        registry.end_session(self.key, _ran_on(process, process.GetStopID()))  # continue & co. are LLDB's again


def _ran_on(process, stop_id):
    """An expiry for registry.end_session: why the frozen trace no longer describes ``process``, or None.

    The process's natural stop id, which expression evaluation leaves alone, changes when it runs on;
    a lookup-time check, rather than a stop hook, also catches a process killed or detached meanwhile.
    """
    pid = process.GetProcessID()
    exited = process.GetState() == lldb.eStateExited  # it cannot run on: its trace stays until it is launched again

    def expired():
        if process.IsValid() and process.is_alive and process.GetStopID() == stop_id:
            return None
        if exited and process.IsValid() and process.GetState() == lldb.eStateExited:
            return None
        return (
            f"process {pid} ran on untraced after 'pt stop', so its trace was dropped"
            " ('trace save' before resuming keeps one; 'pt start' records again)"
        )

    return expired


def _signal_stop(target, tid):
    """The signal a live thread stopped for, as LLDB describes it, and its pc; None for any other stop."""
    thread = target.GetProcess().GetThreadByID(tid)
    if not thread.IsValid() or thread.GetStopReason() != lldb.eStopReasonSignal:
        return None
    return ThreadStop(
        thread.GetStopReasonDataAtIndex(0), thread.GetStopDescription(256) or None, thread.GetFrameAtIndex(0).GetPC()
    )


def _memory_modules(target):
    """Modules with no file, read from the process when the trace is saved: the vdso."""
    vdso = vdso_image(target)
    return [("[vdso]", *vdso)] if vdso is not None else []


def session_for(target):
    """The active LiveSession of ``target``, or None."""
    return registry.session_for(target)


def _check_can_start(target):
    process = target.GetProcess()
    if not process.IsValid() or process.GetState() != lldb.eStateStopped:
        raise LiveTraceError("the process must be stopped to start tracing: run to a breakpoint first")
    if session_for(target) is not None:
        raise LiveTraceError("this process is already traced: 'pt stop' first")


def start_software(target, tids, buffer_kb, tsc, psb_period):
    _check_can_start(target)
    if len(tids) != 1:
        raise LiveTraceError(
            "the software recorder follows the one thread it steps: give one -t TID (or select the thread);"
            " --all needs --backend intel-pt"
        )
    if buffer_kb and not psb_period:
        psb_period = circular_psb_period(buffer_kb)
    process = target.GetProcess()

    def pc(tid):
        """Where thread ``tid`` stands; None once it is gone (the process died: LLDB gives an invalid address)."""
        thread = process.GetThreadByID(tid)
        found = thread.GetFrameAtIndex(0).GetPC() if thread.IsValid() and process.is_alive else None
        return None if found == lldb.LLDB_INVALID_ADDRESS else found

    backend = SoftwareBackend(
        process.GetProcessID(),
        tids,
        lambda address, size: read_memory(process, address, size),
        pc,
        buffer_kb,
        tsc,
        psb_period,
        vdso=vdso_span(target),
        keep_addresses=KEEP_ADDRESSES,
    )
    return LiveSession(target, backend, tids)


def start_intel_pt(target, tids, buffer_kb, tsc, psb_period, all_threads=False):
    _check_can_start(target)
    session = LiveSession(target, IntelPtBackend(tids, buffer_kb, tsc, psb_period, all_threads), tids)
    hook = f"{StopHook.__module__}.{StopHook.__name__}"
    added = run_command(target.GetDebugger(), f"target stop-hook add -P {hook}")
    number = re.search(r"#(\d+)", added)  # "Stop hook #3 added."
    session.stop_hook = int(number[1]) if number else None
    return session


class StopHook:
    """A scripted stop hook: every stop of a process traced with Intel PT refreshes its trace.

    It finds the session by target: a session that picks up new threads registers again under a new key.
    """

    def __init__(self, target, _args, _internal_dict=None):
        self.target = target

    def handle_stop(self, _exe_ctx, _stream):
        session = session_for(self.target)
        if session is not None:
            session.stopped()
        return True
