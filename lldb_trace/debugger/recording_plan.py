"""The recorded run: a scripted thread plan that moves the thread and tells the software backend what it ran.

``pt start --backend software`` makes ``continue``, ``next``, ``step`` and
``finish`` (``process continue``, ``thread step-over|step-in|step-out``) on
the traced process run :func:`run_recorded`: a RecordingPlan moves the
selected thread (through stretches predicted by an emulator, branch to
branch, or by single steps), feeds every instruction it ran to the backend
(capture/live_software/backend.py), and stops where the command would
(stop_rules.py).  At each stop the recorded stream pauses (FUP + TIP.PGD at the
pc, as user-space PT shows a trap into the debugger).  Other threads run
freely, untraced, while the selected one is stepped; a process the thread
creates (fork, vfork, clone without CLONE_THREAD) is let go by LLDB and runs
untraced: its pid is noted (``trace dump``, ``trace save``).
"""

import lldb

from ..capture.live_software import emulation
from ..capture.live_software.backend import UntracedRun
from ..capture.process_view import caught_signals, read_maps
from ..values.machine_state import TRACKED
from . import registry
from .live_session import LiveTraceError
from .stop_rules import StopRule, line_of

PLAN_CLASS = f"{__name__}.RecordingPlan"
# The stops of a thread that created a process (fork, vfork, clone without CLONE_THREAD); the child's pid is
# their data (LLDB 14 and later).
_CREATIONS = tuple(getattr(lldb, name) for name in ("eStopReasonFork", "eStopReasonVFork") if hasattr(lldb, name))
MODES = {
    "process continue": "continue",
    "thread continue": "continue",
    "thread step-over": "next",
    "thread step-in": "step",
    "thread step-out": "finish",
}


class RecordingPlan:
    """A scripted thread plan that records every instruction the thread runs until the StopRule says stop.

    ``next`` and ``step`` judge every instruction of the frame they started in (a line may change
    anywhere), so there they single-step; a call they do not stop in (any call for ``next``, a
    call into code without line information for ``step``) runs out like a ``finish``.
    ``continue`` and ``finish`` only need to stop at breakpoints and returns.  From each stop the
    emulator predicts the thread's path (capture/live_software/emulation.py) until something it must not run;
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
    instruction's successors is recorded as the signal's interrupt (ThreadRecorder.stepped).
    """

    def __init__(self, thread_plan, args, _internal_dict=None):
        self.thread_plan = thread_plan
        self.session = registry.session(args.GetValueForKey("key").GetStringValue(100))
        self.arrivals_left = 0  # how many more times the thread reaches the end of the run it is on
        self.stopped_before = False
        self.thread = thread_plan.GetThread()
        self.tid = self.thread.GetThreadID()
        self.target = self.thread.GetProcess().GetTarget()
        self.backend, self.rule = self.session.backend, self.session.rule
        self.backend.catch_up(self.tid)  # the last command's run, if a signal ended it unseen
        self.silent_signals = silent_signals(self.thread.GetProcess())
        self.delivers = self._delivers_to_handler()  # the first step enters a handler, and is single-stepped
        self.may_run = self._no_silent_handlers() and not self.delivers  # or every instruction is single-stepped
        self.predicts = self.target.GetNumWatchpoints() == 0
        self.returning_to = None  # (return address, callee's CFA) while next/step run a call out
        self.watched = self.rule.watched  # and the return address then: where runs must stop
        self.mappings = None  # the process's, read again after every system call
        self.vdso = self.backend.vdso
        frame = self.thread.GetFrameAtIndex(0)
        self.keeps_states = all(frame.FindRegister(name).IsValid() for name in TRACKED)  # LLDB shows them all
        if self._in_vdso(self.thread.GetFrameAtIndex(0).GetPC()) and self._run_out_of_vdso():
            return
        if self._running():
            self._plan_run(self.thread.GetFrameAtIndex(0))

    def _no_silent_handlers(self):
        caught = caught_signals(self.thread.GetProcess().GetProcessID())  # None: not a local process
        return caught is not None and not (caught & self.silent_signals)

    def _delivers_to_handler(self):
        """Whether resuming delivers the signal the thread stopped for (LLDB passes it) to a handler: a run from
        here would go through the handler unseen and be refused where it ends (a gap), where a single step enters
        the handler as signals passed unseen do (ThreadRecorder.stepped)."""
        if self.thread.GetStopReason() != lldb.eStopReasonSignal:
            return False
        signo = self.thread.GetStopReasonDataAtIndex(0)
        caught = caught_signals(self.thread.GetProcess().GetProcessID())
        passed = _passed(self.thread.GetProcess().GetUnixSignals(), signo)
        return passed and caught is not None and bool(caught & 1 << (signo - 1))

    def explains_stop(self, _event):
        reason = self.thread.GetStopReason()
        if reason in _CREATIONS:  # LLDB lets the new process go (follow-fork-mode parent): it runs untraced
            self.session.child_created(self.thread.GetStopReasonDataAtIndex(0))
        return reason in (lldb.eStopReasonTrace, lldb.eStopReasonNone, lldb.eStopReasonBreakpoint)

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
            if self.delivers:  # the step that entered the handler is recorded: runs may go on from here
                self.delivers = False
                self.may_run = self._no_silent_handlers()
        elif self.arrivals_left > 1 and pc == run.end:  # only predictions pass their end more than once
            self.arrivals_left -= 1  # a loop passes the end before the stretch is over
            self._run_to(pc)
            return False
        else:
            self.backend.arrived(self.tid, pc, lambda names: register_values(frame, names))
        if self.keeps_states:
            self.backend.keep_state(self.tid, pc, register_values(frame, TRACKED))
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
        if self.rule.mode == "step" and (line_of(frame) or frame.GetSymbol().GetType() == lldb.eSymbolTypeTrampoline):
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
            and pc == self.backend.recorders[self.tid].current
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
            run = self.backend.lookahead.ahead(frame.GetPC(), register, self.watched)
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
            registers = register_values(frame, emulation.LOADED)
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


def register_values(frame, names):
    """``{name: value}`` of the frame's registers (vector registers as little-endian integers)."""
    values = {}
    for name in names:
        register = frame.FindRegister(name)
        if not register.IsValid():
            raise LookupError(name)
        # A register has no dynamic type or synthetic children: not looking for them makes each read about a
        # quarter cheaper, and the recorder reads 20 registers at every stop.
        register.SetPreferDynamicValue(lldb.eNoDynamicValues)
        register.SetPreferSyntheticValue(False)
        if register.GetByteSize() > 8:
            error = lldb.SBError()
            data = register.GetData()
            values[name] = int.from_bytes(bytes(data.ReadRawData(error, 0, data.GetByteSize())), "little")
        else:
            values[name] = register.GetValueAsUnsigned()
    return values


def silent_signals(process):
    """The mask of signals lldb-server passes to the process without telling LLDB."""
    signals = process.GetUnixSignals()
    mask = 0
    for index in range(signals.GetNumSignals()):
        signo = signals.GetSignalAtIndex(index)
        if _passed(signals, signo) and not signals.GetShouldStop(signo) and not signals.GetShouldNotify(signo):
            mask |= 1 << (signo - 1)
    return mask


def _state_name(process):
    return "exited" if process.GetState() == lldb.eStateExited else lldb.SBDebugger.StateAsCString(process.GetState())


def _passed(signals, signo):
    """Whether LLDB hands signal ``signo`` to the process when it resumes (``process handle``'s pass)."""
    return 0 < signo < 64 and not signals.GetShouldSuppress(signo)


def run_recorded(debugger, session, mode):
    """Run ``mode`` on the selected thread as a recorded single-step plan; returns the status text."""
    process = session.target.GetProcess()
    if not process.is_alive:  # it exited, or was killed: LLDB's own commands say so (this one waited for a resume)
        state = _state_name(process)
        raise LiveTraceError(f"process {process.GetProcessID()} is gone ({state}): 'run' starts it again")
    thread = process.GetSelectedThread()
    if thread.GetThreadID() not in session.tids and mode == "continue":  # the process goes on: its traced thread runs
        thread = next((traced for traced in process if traced.GetThreadID() in session.tids), thread)
    if thread.GetThreadID() not in session.tids:
        raise LiveTraceError(f"thread {thread.GetThreadID()} is not traced: select a traced thread or 'pt stop'")
    session.rule = StopRule(mode, thread)
    children = len(session.untraced_children)
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
    note = _children_note(session.untraced_children[children:])
    if process.GetState() == lldb.eStateExited:
        return f"{note}Process {process.GetProcessID()} exited with status = {process.GetExitStatus()}\n"
    _select_the_stopping_thread(process, thread)
    process.GetSelectedThread().GetStatus(stream)
    return note + (stream.GetData() or "")


def _select_the_stopping_thread(process, stepped):
    """Where the recorded thread only stopped after a step of the plan (``trace``) because another thread stopped
    (a breakpoint, a signal), that thread is selected, as LLDB selects it after a plain ``continue``."""
    if process.GetSelectedThread().GetThreadID() != stepped.GetThreadID():
        return
    if stepped.GetStopReason() not in (lldb.eStopReasonTrace, lldb.eStopReasonNone):
        return
    for thread in process:
        if thread.GetStopReason() not in (lldb.eStopReasonTrace, lldb.eStopReasonNone, lldb.eStopReasonInvalid):
            process.SetSelectedThread(thread)
            return


def _children_note(pids):
    if not pids:
        return ""
    listed = ", ".join(map(str, pids))
    return f"note: the process created {len(pids)} process(es) that ran untraced: {listed}\n"
