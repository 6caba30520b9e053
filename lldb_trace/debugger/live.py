"""Tracing a live process under LLDB: the software recorder driven by LLDB's own stepping.

``pt start --backend software`` attaches a LiveSession to the process.  From
then on ``continue``, ``next``, ``step`` and ``finish`` (``process continue``,
``thread step-over|step-in|step-out``) run as a scripted thread plan that
moves the selected thread (through stretches predicted by an emulator, branch
to branch, or by single steps; see RecordingPlan), feeds every instruction it
ran to the recorder (which writes real Intel PT packets) and stops where the
command would have stopped:
a breakpoint location, a new source line, a returned frame.  At each stop
the recorded stream pauses (FUP + TIP.PGD at the pc, as user-space PT shows a
trap into the debugger) and ``trace dump`` decodes it like any other trace.

Other threads run freely, untraced, while the selected one is stepped.
"""

import contextlib
import re
import time

import lldb

from ..capture import emulation, intel_pt_backend
from ..capture.flow import FlowOptions, ThreadFlow
from ..capture.process_view import ProcessMemory, caught_signals, read_maps
from ..capture.routes import Router
from ..errors import LldbTraceError
from ..live_trace import LiveProcessTrace, live_module
from ..x86_flow import Classifier, Flow
from . import registry
from .interpreter import run_command
from .stopped_trace import FrozenBackend, ran_on

PLAN_CLASS = "lldb_trace.debugger.live.RecordingPlan"
MODES = {
    "process continue": "continue",
    "thread continue": "continue",
    "thread step-over": "next",
    "thread step-in": "step",
    "thread step-out": "finish",
}
_sessions = {}  # registry key -> LiveSession
KEEP_ADDRESSES = False  # keep every recorded address (tests compare them with the decoded trace): 8 bytes each


class LiveTraceError(LldbTraceError):
    """Tracing cannot start or run as asked."""


class SoftwareBackend:
    """The recorder's per-thread flows; a thread's bytes are produced once per stop."""

    name = "software recorder"
    all_threads = False

    def __init__(self, process, tids, buffer_kb, tsc, psb_period):
        self.buffer_bytes = buffer_kb * 1024 if buffer_kb else None
        read = lambda address, size: _read(process, address, size)  # noqa: E731
        self.classifier = Classifier(read)
        self.router = Router(self.classifier, read)
        self.process_memory = _process_memory(process)
        self.predictor = emulation.Predictor(self._page_reader(read))
        clock = time.monotonic_ns if tsc else None
        self.vdso = vdso_span(process.GetTarget())
        untraced = (self.vdso,) if self.vdso else ()
        options = FlowOptions(psb_period or 4096, clock, keep_addresses=KEEP_ADDRESSES, untraced=untraced)
        self.flows = {}
        for tid in tids:
            pc = process.GetThreadByID(tid).GetFrameAtIndex(0).GetPC()
            self.flows[tid] = ThreadFlow(tid, pc, self.classifier, options)
        self.process = process
        self.pending = {}  # tid -> the route or Prediction the thread was sent along, until recorded
        self._bytes = {}
        self._generations = dict.fromkeys(tids, 0)
        self.single_steps = dict.fromkeys(tids, 0)
        self.predictions = dict.fromkeys(tids, 0)  # stretches run as predicted
        self.mispredictions = dict.fromkeys(tids, 0)  # stretches lost: the thread did not end as predicted

    def stepped(self, tid, pc):
        self.single_steps[tid] += 1
        self.ran(tid, (pc,))

    def ran(self, tid, pcs):
        """The thread ran one instruction per pc in ``pcs``, each pc where it stood next."""
        flow = self.flows[tid]
        for pc in pcs:
            flow.stepped(pc)
        self._changed(tid)

    def lost(self, tid, pc):
        """The thread's path to ``pc`` is unknown (a misprediction): the trace shows a gap there."""
        self.mispredictions[tid] += 1
        self.flows[tid].lost(pc)
        self._changed(tid)

    def _changed(self, tid):
        self._bytes.pop(tid, None)
        self._generations[tid] += 1

    def arrived(self, tid, pc, registers=None):
        """The thread stopped at ``pc`` on the run it was sent along (``pending``): record that run.

        ``registers(names)`` gives the thread's registers, to check a prediction against.  Without
        it (a stop the plan never saw: a crash, an interrupt), where in a predicted stretch the
        thread stopped cannot be told, and only a gap is recorded.
        """
        run = self.pending.pop(tid, None)
        if isinstance(run, UntracedRun):
            self.flows[tid].untraced(pc)
            self._changed(tid)
        elif not isinstance(run, emulation.Prediction):
            if run is not None:
                self.ran(tid, _executed(run, pc))
        elif registers and pc == run.end and emulation.matches(run.registers, registers(run.registers)):
            self.predictions[tid] += 1
            self.ran(tid, run.steps())
        elif registers or pc != self.flows[tid].current:
            self.lost(tid, pc)

    def catch_up(self, tid):
        """Record the run a signal stop ended unseen by the plan (when the trace is read, or a command starts)."""
        thread = self.process.GetThreadByID(tid)
        if tid in self.pending and thread.IsValid():
            self.arrived(tid, thread.GetFrameAtIndex(0).GetPC())

    def trace_bytes(self, tid):
        if tid not in self.flows:
            return None
        self.catch_up(tid)
        if tid not in self._bytes:
            self._bytes[tid] = self.flows[tid].paused(self.buffer_bytes)
        return self._bytes[tid] or None

    def generation(self, tid):
        if tid in self.flows:
            self.catch_up(tid)
        return self._generations.get(tid, 0)

    def snapshot(self):
        """Every thread's trace now (for ``pt stop``)."""
        return {tid: self.trace_bytes(tid) for tid in self.flows}

    def at_far_transfer(self, tid):
        """Whether the thread stands at a system call or other far transfer."""
        flow = self.flows[tid]
        return self.classifier[flow.current].flow == Flow.FAR

    def steps(self, tid):
        return len(self.flows[tid].truth.addresses)

    def _page_reader(self, read):
        """Reads for the emulator: /proc/PID/mem (20 times faster than through LLDB) where allowed.

        Those bytes include LLDB's breakpoint instructions, which the emulator never runs past.
        """
        if self.process_memory is None:
            return read

        def read_page(address, size):
            data = self.process_memory.read(address, size)
            return data if len(data) == size else read(address, size)

        return read_page

    def close(self):
        if self.process_memory is not None:
            self.process_memory.close()


class UntracedRun:
    """A run the recorder does not follow: the vdso, run at full speed back to ``end`` (its caller).

    Its clock functions retry until they read the time within one kernel tick; stepped through
    LLDB, each try takes longer than a tick, so they would never return.
    """

    def __init__(self, end):
        self.end = end


class IntelPtBackend:
    """One perf_event_open intel_pt event per thread; buffers are read at every stop (the stop hook)."""

    name = "intel-pt"

    def __init__(self, tids, buffer_kb, tsc, psb_period, all_threads):
        self.buffer_kb, self.tsc, self.psb_period, self.all_threads = buffer_kb or 64, tsc, psb_period, all_threads
        self.pmu = intel_pt_backend.check_available()
        self.traces = {}
        self._bytes = {}
        self._generations = {}
        try:
            for tid in tids:
                self.add_thread(tid)
        except Exception:
            self.close()
            raise

    def add_thread(self, tid):
        self.traces[tid] = intel_pt_backend.ThreadTrace(
            tid, self.buffer_kb, tsc=self.tsc, psb_period=self.psb_period, pmu=self.pmu
        )
        self._generations[tid] = 0

    def read_all(self):
        """Pause, copy and resume every thread's buffer that changed since the last read."""
        for tid, trace in self.traces.items():
            if tid not in self._bytes or trace.changed():
                self._bytes[tid] = trace.read()
                self._generations[tid] += 1

    def trace_bytes(self, tid):
        if tid not in self.traces:
            return None
        if tid not in self._bytes:
            self.read_all()
        return self._bytes.get(tid) or None

    def generation(self, tid):
        return self._generations.get(tid, 0)

    def snapshot(self):
        """Every thread's trace now (for ``pt stop``): the buffers read once more, before they are closed."""
        self.read_all()
        return {tid: self._bytes.get(tid) or None for tid in self.traces}

    def close(self):
        for trace in self.traces.values():
            trace.close()


def _process_memory(process):
    """The process's memory through /proc, or None (not a local process, or ptrace rules forbid it)."""
    try:
        return ProcessMemory(process.GetProcessID())
    except OSError:
        return None


def _read(process, address, size):
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
    data = _read(target.GetProcess(), start, end - start)
    return (start, data) if len(data) == end - start else None


def _uuid(module):
    uuid = module.GetUUIDString()
    return uuid.replace("-", "").lower() if uuid else None


class LiveSession:
    """One traced live process: its backend, its LiveProcessTrace, and the current command's stop rule."""

    def __init__(self, target, backend, tids):
        self.target = target
        self.backend = backend
        self.tids = tids
        self.rule = None
        self.stop_hook = None  # the id of the stop hook that reads an Intel PT session's buffers
        self._register()

    def _register(self):
        process = self.target.GetProcess()
        modules = target_modules(self.target)
        self.trace = LiveProcessTrace(process.GetProcessID(), self.target.GetTriple(), self.tids, modules, self.backend)
        self.key = registry.add(self.target, self.trace)
        _sessions[self.key] = self

    def _unregister(self):
        registry.remove(self.key)
        _sessions.pop(self.key, None)

    def stopped(self):
        """At every stop (intel-pt): trace the threads created since (--all), then read the buffers."""
        if self.backend.all_threads:
            new = [t.GetThreadID() for t in self.target.GetProcess() if t.GetThreadID() not in self.backend.traces]
            for tid in new:
                self.backend.add_thread(tid)
            if new:
                self._unregister()
                self.tids = sorted(self.backend.traces)
                self._register()
        self.backend.read_all()

    def close(self):
        self._unregister()
        self.backend.close()

    def stop(self):
        """``pt stop``: stop recording, keep the trace readable until the process runs on (stopped_trace.py)."""
        if self.stop_hook is not None:
            with contextlib.suppress(LldbTraceError):  # already deleted by the user: nothing left to do
                run_command(self.target.GetDebugger(), f"target stop-hook delete {self.stop_hook}")
        frozen = FrozenBackend(self.backend)
        self.backend.close()
        self.trace.backend = frozen
        _sessions.pop(self.key, None)  # continue/next/step/finish are LLDB's own again
        process = self.target.GetProcess()
        registry.expire_when(self.key, ran_on(process, process.GetStopID()))


def session_for(target):
    for session in _sessions.values():
        if session.target == target:
            return session
    return None


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
        psb_period = min(4096, buffer_kb * 1024 // 4)  # a circular buffer must keep PSBs to decode from
    backend = SoftwareBackend(target.GetProcess(), tids, buffer_kb, tsc, psb_period)
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


# -- the stepping ------------------------------------------------------------------------------------


class StopRule:
    """Where a command stops, judged after every step of the thread."""

    def __init__(self, mode, thread):
        self.mode = mode
        frame = thread.GetFrameAtIndex(0)
        self.start_cfa = frame.GetCFA()
        self.start_line = _line(frame)
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
        line = _line(frame)
        if line is None or line == self.start_line:
            return False
        if self.mode == "step" and not _in_prologue(frame, pc):
            self.reason = "step in"
            return True
        if self.mode == "next" and frame.GetCFA() >= self.start_cfa:
            self.reason = "step over"
            return True
        return False


def _in_prologue(frame, pc):
    """Whether ``pc`` is in its function's prologue, which LLDB's step-in steps through to the body."""
    function = frame.GetFunction()
    if not function.IsValid():
        return False
    start = function.GetStartAddress().GetLoadAddress(frame.GetThread().GetProcess().GetTarget())
    return start <= pc < start + function.GetPrologueByteSize()


def _line(frame):
    entry = frame.GetLineEntry()
    if not entry.IsValid() or not entry.GetLine():
        return None
    return (entry.GetFileSpec().fullpath, entry.GetLine())


class RecordingPlan:
    """A scripted thread plan that records every instruction the thread runs until the StopRule says stop.

    ``next`` and ``step`` judge every instruction of the frame they started in (a line may change
    anywhere), so there they single-step; a call they do not stop in (any call for ``next``, a
    call into code without line information for ``step``) runs out like a ``finish``.
    ``continue`` and ``finish`` only need to stop at breakpoints and returns.  From each stop the
    emulator predicts the thread's path (capture/emulation.py) until something it must not run;
    the thread runs to the stretch's end with one breakpoint (a RunToAddress sub-plan, again for
    each pass of a loop), and the stretch is recorded if the thread's registers there are the
    predicted ones, a gap otherwise.  Where the emulator cannot start (a system call, AVX code...),
    the thread runs to its next branch, whose successor is read from the registers, and a branch
    that cannot be evaluated exactly is single-stepped.  The emulator only reads memory nothing
    else can write meanwhile, so it is used only while the process has one thread and the target
    no watchpoints.

    A signal LLDB passes without stopping (SIGALRM, SIGCHLD... by default) is delivered inside
    lldb-server, unseen: a handler run during a run between branches would go unrecorded, and
    could even reach the breakpoint the run waits for.  So runs are used only while no such
    signal has a handler (the process's caught-signal mask, read again after every system
    call); otherwise every instruction is single-stepped, and a step that lands off the
    instruction's successors is recorded as the signal's interrupt (ThreadFlow.stepped).
    """

    def __init__(self, thread_plan, args, _internal_dict=None):
        self.thread_plan = thread_plan
        self.session = _sessions[args.GetValueForKey("key").GetStringValue(100)]
        self.arrivals_left = 0  # how many more times the thread reaches the end of the run it is on
        self.stopped_before = False
        self.thread = thread_plan.GetThread()
        self.tid = self.thread.GetThreadID()
        self.target = self.thread.GetProcess().GetTarget()
        self.backend, self.rule = self.session.backend, self.session.rule
        self.backend.catch_up(self.tid)  # the last command's run, if a signal ended it unseen
        self.silent_signals = _silent_signals(self.thread.GetProcess())
        self.may_run = self._no_silent_handlers()  # or every instruction is single-stepped
        self.predicts = self.target.GetNumWatchpoints() == 0
        self.returning_to = None  # (return address, callee's CFA) while next/step run a call out
        self.watched = self.rule.watched  # and the return address then: where runs must stop
        self.mappings = None  # the process's, read again after every system call
        self.vdso = self.backend.vdso
        if self._in_vdso(self.thread.GetFrameAtIndex(0).GetPC()) and self._run_out_of_vdso():
            return
        if self._running():
            self._plan_run(self.thread.GetFrameAtIndex(0))

    def _no_silent_handlers(self):
        caught = caught_signals(self.thread.GetProcess().GetProcessID())  # None: not a local process
        return caught is not None and not (caught & self.silent_signals)

    def explains_stop(self, _event):
        return self.thread.GetStopReason() in (lldb.eStopReasonTrace, lldb.eStopReasonNone, lldb.eStopReasonBreakpoint)

    def should_stop(self, _event):
        frame = self.thread.GetFrameAtIndex(0)
        pc = frame.GetPC()
        if self._breakpoint_reported_late(pc):
            return False  # a single step next: LLDB steps over the breakpoint
        run = self.backend.pending.get(self.tid)
        if run is None:
            was_system_call = self.backend.at_far_transfer(self.tid)
            self.backend.stepped(self.tid, pc)
            if was_system_call:
                self.mappings = None  # mmap, munmap, mprotect...
                self.may_run = self.may_run and self._no_silent_handlers()  # sigaction may have installed one
        elif self.arrivals_left > 1 and pc == run.end:  # only predictions pass their end more than once
            self.arrivals_left -= 1  # a loop passes the end before the stretch is over
            self._run_to(pc)
            return False
        else:
            self.backend.arrived(self.tid, pc, lambda names: _register_values(frame, names))
        if self.returning_to is not None and pc == self.returning_to[0] and frame.GetCFA() > self.returning_to[1]:
            self.returning_to = None  # back from the call: the line rule applies again
            self.watched = self.rule.watched
        if self.rule.at_breakpoint(pc) if self.returning_to else self.rule.should_stop(frame, pc):
            # Complete, the plan leaves LLDB's plan stack and its description is the stop reason.
            self.thread_plan.SetPlanComplete(True)
            return True
        if self._in_vdso(pc) and self._run_out_of_vdso():
            return False
        if self.rule.mode in ("next", "step") and self.returning_to is None:
            self._run_out_of_call(frame)
        if self._running():
            self._plan_run(frame)
        return False

    def _running(self):
        """Whether the thread runs (predicted, or branch to branch) rather than single-steps now."""
        return self.may_run and (self.rule.mode in ("continue", "finish") or self.returning_to is not None)

    def _in_vdso(self, pc):
        return self.vdso is not None and self.vdso[0] <= pc < self.vdso[1]

    def _run_out_of_vdso(self):
        """Let the vdso run at full speed back to its caller, untraced (see UntracedRun); False if it cannot."""
        caller = self.thread.GetFrameAtIndex(1)
        resume = caller.GetPC() if caller.IsValid() else None
        if resume is None or self._in_vdso(resume):
            return False
        if resume not in self.rule.breakpoints and not self._run_to(resume):
            return False  # (at a user's breakpoint, that breakpoint ends the run)
        self.backend.pending[self.tid] = UntracedRun(resume)
        self.arrivals_left = 1
        return True

    def _run_out_of_call(self, frame):
        """For next/step in a call they do not stop in: run to its return (only breakpoints stop it).

        ``step`` single-steps through a PLT stub (a trampoline): where it leads may have lines.
        """
        if frame.GetCFA() >= self.rule.start_cfa:
            return  # still in the frame the command started in
        if self.rule.mode == "step" and (_line(frame) or frame.GetSymbol().GetType() == lldb.eSymbolTypeTrampoline):
            return
        caller = self.thread.GetFrameAtIndex(1)
        if caller.IsValid():
            self.returning_to = (caller.GetPC(), frame.GetCFA())
            self.watched = self.rule.watched | {caller.GetPC()}

    def _breakpoint_reported_late(self, pc):
        """LLDB reports a breakpoint a single step landed on when the thread resumes, not when it lands.

        The last command already stopped there (and recorded the step); without this, the next
        command would stop at once, at the same place, for the same breakpoint.
        """
        first, self.stopped_before = not self.stopped_before, True
        return (
            first
            and self.tid not in self.backend.pending
            and self.thread.GetStopReason() == lldb.eStopReasonBreakpoint
            and pc == self.backend.flows[self.tid].current
        )

    def _plan_run(self, frame):
        """Queue a run to the next branch and remember the instructions on the way; or leave a single step."""

        def register(name):
            value = frame.FindRegister(name)
            if not value.IsValid():
                raise LookupError(name)
            return value.GetValueAsUnsigned()

        if frame.GetPC() in self.rule.breakpoints:
            return  # LLDB steps over a breakpoint under the pc by itself; a stop right after it must be its own
        prediction = self._predict(frame) if self.predicts else None
        if prediction is not None:
            run, end = prediction, prediction.end
        else:
            run = self.backend.router.route(frame.GetPC(), register, self.watched)
            if run is None:
                return
            end = run[-1]
        if end in self.rule.breakpoints or self._run_to(end):
            # (At a user's breakpoint, the breakpoint stops the run; a second one would show in the stop reason.)
            self.backend.pending[self.tid] = run
            self.arrivals_left = prediction.arrivals if prediction else 1

    def _run_to(self, address):
        return self.thread_plan.QueueThreadPlanForRunToAddress(lldb.SBAddress(address, self.target)).IsValid()

    def _predict(self, frame):
        """The emulator's path from here, when nothing else can change the thread's memory meanwhile."""
        process = self.thread.GetProcess()
        if process.GetNumThreads() != 1:
            self.mappings = None  # the other threads may map and unmap memory without this one's system calls
            return None
        pc = frame.GetPC()
        if pc in self.watched or pc in self.backend.predictor.hopeless:
            return None
        try:
            registers = _register_values(frame, emulation.LOADED)
            if self.mappings is None:
                self.mappings = read_maps(process.GetProcessID())
        except (LookupError, OSError):
            self.predicts = False  # not a local process, or LLDB lacks a register: branch by branch then
            return None
        return self.backend.predictor.predict(registers, self.mappings, self.watched)

    def should_step(self):
        # A run state, not a bool: LLDB 19-22 read the answer as a StateType, where False means
        # stepping; every version steps on eStateStepping and runs on eStateRunning.
        return lldb.eStateRunning if self.tid in self.backend.pending else lldb.eStateStepping

    def is_stale(self):
        return False

    def stop_description(self, stream):
        stream.Print(f"{self.rule.reason or 'recorded'} (lldb_trace software recorder)")


def _register_values(frame, names):
    """``{name: value}`` of the frame's registers (vector registers as little-endian integers)."""
    values = {}
    for name in names:
        register = frame.FindRegister(name)
        if not register.IsValid():
            raise LookupError(name)
        if register.GetByteSize() > 8:
            error = lldb.SBError()
            data = register.GetData()
            values[name] = int.from_bytes(bytes(data.ReadRawData(error, 0, data.GetByteSize())), "little")
        else:
            values[name] = register.GetValueAsUnsigned()
    return values


def _silent_signals(process):
    """The mask of signals lldb-server passes to the process without telling LLDB."""
    signals = process.GetUnixSignals()
    mask = 0
    for index in range(signals.GetNumSignals()):
        signo = signals.GetSignalAtIndex(index)
        passed = 0 < signo < 64 and not signals.GetShouldSuppress(signo)
        if passed and not signals.GetShouldStop(signo) and not signals.GetShouldNotify(signo):
            mask |= 1 << (signo - 1)
    return mask


def _executed(route, pc):
    """The successive pcs of a run along ``route`` (its start, its stops, its end) that stopped at ``pc``.

    Normally ``pc`` is the route's end; a user breakpoint on the way stops it early.  A pc off the
    route (something asynchronous moved the thread) is passed on as where the thread went, and
    ThreadFlow records an interruption there.
    """
    if pc == route[-1]:
        return route[1:]
    if pc in route[1:-1]:
        return route[1 : route.index(pc, 1) + 1]
    return [] if pc == route[0] else [pc]


def run_recorded(debugger, session, mode):
    """Run ``mode`` on the selected thread as a recorded single-step plan; returns the status text."""
    process = session.target.GetProcess()
    thread = process.GetSelectedThread()
    if thread.GetThreadID() not in session.tids:
        raise LiveTraceError(f"thread {thread.GetThreadID()} is not traced: select a traced thread or 'pt stop'")
    session.rule = StopRule(mode, thread)
    arguments = lldb.SBStructuredData()
    arguments.SetFromJSON(f'{{"key": "{session.key}"}}')
    was_async = debugger.GetAsync()
    debugger.SetAsync(False)
    try:
        error = thread.StepUsingScriptedThreadPlan(PLAN_CLASS, arguments, True)
    finally:
        debugger.SetAsync(was_async)
    if error.Fail():
        raise LiveTraceError(f"stepping failed: {error.GetCString()}")
    stream = lldb.SBStream()
    if process.GetState() == lldb.eStateExited:
        return f"Process {process.GetProcessID()} exited with status = {process.GetExitStatus()}\n"
    process.GetSelectedThread().GetStatus(stream)
    return stream.GetData() or ""
