"""Recording a program with ptrace: launch, run to the start symbol, single-step every thread.

All traced threads are stepped concurrently (each is re-stepped as soon as
its step ends), so a thread waiting on another never deadlocks the recording.
Signals are passed on; a caught one is seen as an asynchronous branch into its
handler.  The recording ends when a thread reaches the ``until`` symbol (the
process is then killed), when the process exits (each thread's exit status is
its stop), when it crashes (the partial recording is kept and marked, with the
signal that killed the thread as that thread's stop), or at Ctrl-C, between
two steps.

A process the program creates (fork, vfork, clone without CLONE_THREAD) is let
go at its first stop and runs untraced; its pid is kept (``untraced_children``).
Following it would need a second address space in the bundle, and most children
exec another program at once, which a bundle's process (one set of modules)
cannot show.
"""

import contextlib
import os
import signal
import time

from ...bundle.model import ThreadStop
from ...x86.instructions import Classifier, Transfer
from ..encoder.thread_recorder import RecorderOptions, ThreadRecorder
from ..encoder.timing_packets import clock_info
from ..process_view import ModuleMap, ProcessMemory, caught_signals, thread_group, vdso_image
from . import core_snapshot, ptrace
from .created_tasks import shares_memory
from .ending_signals import ending_signals_held, ending_signals_to
from .program_checks import RecordError, resolve_program
from .recorded import Recording, RecordOptions
from .register_log import RegisterLog
from .stop_signal import signal_name, stop_of
from .syscall_results import SyscallLog

PROGRESS_STOPS = 4096  # stops between two progress reports


class _WaitInterruptedError(Exception):
    """Ctrl-C while waiting for the next stop."""


class _Tracee:
    """The program being recorded: its ptrace'd process, stepped thread by thread, and what was recorded so far."""

    def __init__(self, program, args, info, options, progress=None):
        self.program, self.args, self.info, self.options = program, args, info, options
        self.pid = ptrace.launch(program, args, aslr=options.aslr)
        self.memory = ProcessMemory(self.pid)
        self.modules = ModuleMap(self.pid)
        self.classifier = Classifier(self._read_code)
        clock = time.monotonic_ns if options.tsc else None
        self.recorder_options = RecorderOptions(
            options.psb_period,
            clock,
            options.overflow_at,
            options.overflow_lost,
            mtc_period=options.mtc_period if clock else None,
            cycle_accurate=options.cycle_accurate and clock is not None,
        )
        self.recorders = {}
        self.finished = {}
        self.free = set()  # live threads not recorded
        self.untraced_threads = []  # every task not recorded in this memory (--threads main, CLONE_VM), ended or not
        self.children = []  # processes the program created, let go to run untraced
        self.early = set()  # new processes whose first stop came before their creator's event
        self.patched = None  # (address, original word) of the breakpoint at main, while it is set
        self.reaped = False  # the process ended before main, and was waited for
        self.status, self.detail = "exited", ""
        self.delivered = {}  # tid -> ThreadStop of the last signal passed on to it without a handler
        self.stops = {}
        self.progress = progress
        self.interrupted = self.waiting = False
        self.cores = core_snapshot.Cores(self.pid, self.memory, program, args) if options.cores else None
        self.syscalls = SyscallLog(self.pid, self.memory) if options.cores else None
        self.registers = RegisterLog() if options.cores else None
        # A PIE's symbols are file addresses: add where the loader put the file.
        self.bias = (self.modules.bias_of(program) or 0) - info.first_load_vaddr if info.is_pie else 0
        self.until = info.symbol(options.until) + self.bias if options.until else None

    def _read_code(self, address, size):
        self.modules.note_address(address)
        return self.memory.read(address, size)

    # Getting to the start.

    def run_to_start(self):
        if self.options.from_start:
            return
        main = self.info.symbol("main")
        if main is None:
            raise RecordError(f"{self.program} has no 'main' symbol: record from process start with --from-start")
        address = main + self.bias
        word = ptrace.peek_word(self.pid, address)
        ptrace.poke_word(self.pid, address, (word & ~0xFF) | 0xCC)
        self.patched = (address, word)  # a child created before main has it too: restored before it goes
        ptrace.cont(self.pid)
        while True:
            tid, status = ptrace.wait_any()
            if tid is None or (tid == self.pid and not os.WIFSTOPPED(status)):
                self.reaped = True
                raise RecordError(f"{self.program} exited before reaching main")
            if not os.WIFSTOPPED(status):
                continue
            sig, event = os.WSTOPSIG(status), status >> 16
            if event in ptrace.CREATION_EVENTS:
                self._created(tid, event, lambda _tid: None)
            elif not self._ours(tid):
                self.early.add(tid)  # a new process's first stop: it goes at its creator's event
                continue
            if tid != self.pid or event:
                ptrace.cont(tid, 0 if sig in (signal.SIGTRAP, signal.SIGSTOP) else sig)
                continue
            if sig == signal.SIGTRAP and ptrace.get_rip(tid) == address + 1:
                ptrace.poke_word(self.pid, address, word)
                ptrace.set_rip(tid, address)
                self.patched = None
                return
            ptrace.cont(tid, 0 if sig == signal.SIGTRAP else sig)

    # Stepping.

    def _start_thread(self, tid):
        self.recorders[tid] = ThreadRecorder(tid, self._where(tid), self.classifier, self.recorder_options)
        self._kept(tid, 0)
        ptrace.step(tid)

    def _where(self, tid):
        """Where thread ``tid`` stands; with cores, its whole state is read there too (RegisterLog)."""
        return self.registers.read(tid) if self.registers is not None else ptrace.get_rip(tid)

    def _kept(self, tid, index):
        if self.registers is not None:
            self.registers.keep_read(tid, index)

    def _new_thread(self, tid):
        if tid in self.recorders or tid in self.free:
            return  # its first stop came before its creator's clone event
        if self.options.all_threads:
            self.recorders[tid] = None  # recorded from its first stop
        else:
            self.free.add(tid)
            self.untraced_threads.append(tid)

    def _end_all(self, reason):
        for recorder in self.recorders.values():
            if recorder is not None and not recorder.truth.ended:
                recorder.stop(reason)

    def interrupt(self, signum, _frame):
        """SIGINT (SIGTERM, SIGHUP): the run ends before the next stop is handled (a step is never cut in half)."""
        self.interrupted = "the user" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.waiting:
            raise _WaitInterruptedError

    def run(self):
        self._start_thread(self.pid)
        countdown = PROGRESS_STOPS
        while (self.recorders or self.free) and not self.interrupted:
            countdown -= 1
            if not countdown:
                countdown = PROGRESS_STOPS
                if self.progress is not None:
                    self.progress(sum(len(recorder.truth.addresses) for recorder in self.recorded_threads().values()))
            try:
                self.waiting = True
                tid, status = ptrace.wait_any()
            except _WaitInterruptedError:
                break
            finally:
                self.waiting = False
            if tid is None:
                break
            if not os.WIFSTOPPED(status):
                self._thread_gone(tid, status)
                continue
            if tid not in self.recorders and tid not in self.free:
                if not self._ours(tid):
                    self.early.add(tid)  # a new process's first stop: it goes at its creator's event
                    continue
                self._new_thread(tid)
            if tid in self.free:
                sig = os.WSTOPSIG(status)
                if status >> 16 in ptrace.CREATION_EVENTS:
                    self._created(tid, status >> 16, self._new_thread)
                if status >> 16 == ptrace.PTRACE_EVENT_EXIT:
                    self._exiting(tid)
                    continue
                ptrace.cont(tid, 0 if sig in (signal.SIGTRAP, signal.SIGSTOP) else sig)
                continue
            if self.recorders[tid] is None:
                self._start_thread(tid)  # its first stop (SIGSTOP)
                continue
            if self._stopped(tid, status):
                break
        if self.interrupted:
            self.status, self.detail = "interrupted", f"stopped by {self.interrupted}"
            self._end_core()
            self._end_all("interrupted")

    def _created(self, tid, event, new_thread):
        """Thread ``tid`` created a task (a ptrace creation event): a thread (``new_thread(its tid)``) or a process."""
        new = ptrace.event_message(tid)
        if event == ptrace.PTRACE_EVENT_CLONE and self._ours(new):
            new_thread(new)
        elif shares_memory(tid, event):  # a process in this memory: it may write what the threads read
            self.untraced_threads.append(new)
            self._let_go(new, copied=False)
        else:
            self._let_go(new, copied=event == ptrace.PTRACE_EVENT_FORK)

    def _let_go(self, pid, copied):
        """Detach a process the program created, at its first stop; ``copied``: it has a copy of the memory (fork)."""
        self.children.append(pid)
        if pid in self.early:
            self.early.discard(pid)
        else:
            _, status = os.waitpid(pid, ptrace.WALL)  # it stops at once, with the SIGSTOP of new tracees
            if not os.WIFSTOPPED(status):
                return
        with contextlib.suppress(ptrace.PtraceError):  # killed meanwhile: nothing to let go
            if self.patched is not None and copied:
                ptrace.poke_word(pid, *self.patched)  # (sharing the memory, vfork's child only execs or exits)
            ptrace.detach(pid)

    def _ours(self, tid):
        """Whether task ``tid`` is a thread of the recorded process (when /proc cannot tell, it is taken to be)."""
        return thread_group(tid) in (self.pid, None)

    def recorded_threads(self):
        """Every recorded thread, ended or still live, in the order they appeared."""
        return {**self.finished, **{t: f for t, f in self.recorders.items() if f is not None}}

    def _thread_gone(self, tid, status):
        recorder = self.recorders.pop(tid, None)
        self.free.discard(tid)
        delivered = self.delivered.pop(tid, None)
        if os.WIFSIGNALED(status):
            if delivered is not None and delivered.signal == os.WTERMSIG(status):
                self.stops[tid] = delivered  # this thread took the signal; the others died with it
            where = f"killed by {signal_name(os.WTERMSIG(status))}"
            if recorder is not None:
                where += f" at {recorder.current:#x}"
                recorder.stop(where)
            if tid == self.pid and self.status == "exited":
                self.status, self.detail = "crashed", where
        elif recorder is not None:
            recorder.exited()
            self.stops[tid] = ThreadStop.exit(os.WEXITSTATUS(status))
        if tid == self.pid and os.WIFEXITED(status) and self.status == "exited":
            self.detail = f"exit code {os.WEXITSTATUS(status)}"
        if recorder is not None:
            self.finished[tid] = recorder

    def _stopped(self, tid, status):
        """Handle one stop of a recorded thread; True when the recording is over."""
        recorder = self.recorders[tid]
        sig, event = os.WSTOPSIG(status), status >> 16
        syscall = self.syscalls.entries.pop(tid, None) if self.syscalls is not None else None
        if event in ptrace.CREATION_EVENTS:
            self._created(tid, event, self._new_thread)
            ptrace.step(tid)
            return False
        if event == ptrace.PTRACE_EVENT_EXIT:
            self._exiting(tid)
            return False
        if sig == signal.SIGTRAP:
            new_ip, was, ran = self._where(tid), recorder.current, len(recorder.truth.addresses)
            recorder.stepped(new_ip)
            again = self.syscalls is not None and self.syscalls.resumed(tid)  # a call run again after a signal
            if new_ip != was or len(recorder.truth.addresses) != ran or again:  # not another round of a REP
                self._kept(tid, len(recorder.truth.addresses))
            if syscall is not None:
                self.syscalls.returned(tid, syscall)
            if new_ip == self.until:
                self.status, self.detail = "until", f"thread {tid} reached {self.options.until}"
                self._end_core(tid)
                self._end_all(f"reached {self.options.until}")
                return True
            if self.syscalls is not None and self.classifier[new_ip].transfer == Transfer.FAR:
                self.syscalls.entering(tid, len(recorder.truth.addresses), new_ip)
            ptrace.step(tid)
            return False
        if sig == signal.SIGSTOP:
            ptrace.step(tid)  # a stop meant for us (new thread, or group stop)
            return False
        return self._deliver(tid, recorder, sig)

    def _deliver(self, tid, recorder, sig):
        if not (caught_signals(tid) or 0) >> (sig - 1) & 1:
            self.delivered[tid] = stop_of(tid, sig, recorder.current)
            if core_snapshot.fatal(tid, sig):
                self._end_core(tid, sig)  # at the faulting instruction, the signal not yet delivered
            ptrace.step(tid, sig)  # ignored (a normal step follows) or fatal (the thread dies)
            return False
        if self.syscalls is not None:
            self.syscalls.dropped(tid)
        interrupted_rsp = ptrace.get_regs(tid)["rsp"] if self.syscalls is not None else None
        ptrace.step(tid, sig)
        _, status = os.waitpid(tid, ptrace.WALL)
        if not os.WIFSTOPPED(status):
            self._thread_gone(tid, status)
            return False
        recorder.signalled(self._where(tid))
        self._kept(tid, len(recorder.truth.addresses))
        if interrupted_rsp is not None:
            self.syscalls.signal_frame(tid, len(recorder.truth.addresses), interrupted_rsp)
        if os.WSTOPSIG(status) == signal.SIGTRAP:
            ptrace.step(tid)
            return False
        return self._stopped(tid, status)

    def _end_core(self, tid=None, sig=0):
        """Where the recording ends: the modules mapped now (libc, though the recorded stretch never ran it, holds
        the callers a core's unwinding finds), and the end core."""
        self.modules.refresh()  # at close, the process is gone
        if self.cores is not None:
            self.cores.end(tid, sig, self.recorders, self._thread_gone)

    def _exiting(self, tid):
        """Thread ``tid`` stopped before exiting: when the process ends with it, the end core is taken now."""
        with contextlib.suppress(ptrace.PtraceError):
            if self.cores is not None and self.cores.process_ends_with(tid):
                self._end_core(tid)
            ptrace.cont(tid)

    def close(self):
        self.modules.refresh()
        ptrace.kill(self.pid)
        for pid in self.early:  # created just before the end: its creator's event never came
            self.children.append(pid)
            with contextlib.suppress(ptrace.PtraceError):
                ptrace.detach(pid)
        live = set(self.recorders) | self.free
        if not (self.recorders or self.finished or self.reaped):  # refused before main: wait for it too, or a
            live.add(self.pid)  # later recording by this process takes it for a child of its own
        while True:  # until the tracees are gone: other children of this process (a pool's) may live on
            tid, status = ptrace.wait_any(block=bool(live))
            if tid is None:
                break
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                live.discard(tid)
            elif os.WIFSTOPPED(status) and status >> 16 == ptrace.PTRACE_EVENT_EXIT:
                with contextlib.suppress(ptrace.PtraceError):
                    ptrace.cont(tid)  # killed: let it end
            elif os.WIFSTOPPED(status) and not self._ours(tid):  # a child caught while being created
                self.children.append(tid)
                with contextlib.suppress(ptrace.PtraceError):
                    ptrace.detach(tid)
        self.memory.close()


def record(program, args=(), options=None, progress=None):
    """Record ``program`` and return a Recording (streams, ground truth, modules, stops).

    ``progress(instructions)`` is called now and then during a long recording.
    """
    options = options or RecordOptions()
    path, info = resolve_program(program)
    if options.until and info.symbol(options.until) is None:
        raise RecordError(f"{path} has no function symbol '{options.until}'")
    started = time.monotonic()
    try:
        tracee = _Tracee(path, list(args), info, options, progress)
    except OSError as error:
        raise RecordError(f"cannot run {path}: {error.strerror}") from None
    try:
        tracee.run_to_start()
        vdso = vdso_image(tracee.pid, tracee.memory)  # stepped through like any code: its bytes go in the bundle
        if tracee.cores is not None:
            tracee.cores.start()
        tsc_zero = time.time_ns() - time.monotonic_ns() if options.tsc else None
        with ending_signals_to(tracee.interrupt):  # they end the run cleanly
            tracee.run()
    finally:
        tracee.close()
    with ending_signals_held():
        return _recording(tracee, path, args, options, vdso, tsc_zero, started)


def _recording(tracee, path, args, options, vdso, tsc_zero, started):
    """The Recording of a run that has ended."""
    buffer_bytes = options.buffer_kb * 1024 if options.buffer_kb else None
    threads = tracee.recorded_threads()
    recording = Recording(path, list(args), tracee.pid, tracee.status, tracee.detail, threads)
    recording.streams = {tid: recorder.finish(buffer_bytes) for tid, recorder in threads.items()}
    recording.modules = {p: a for p, a in tracee.modules.modules.items()}
    recording.memory_modules = [("[vdso]", *vdso)] if vdso is not None else []
    recording.stops = tracee.stops
    recording.untraced_children = tracee.children
    recording.untraced_threads = tracee.untraced_threads
    recording.tsc_zero_ns = tsc_zero
    if options.tsc and (options.mtc_period is not None or options.cycle_accurate):
        recording.clock = clock_info(options.mtc_period, options.cycle_accurate)
    recording.seconds = time.monotonic() - started
    traced = {tid: recorder.truth.traced for tid, recorder in threads.items()}  # a ring buffer's start, gaps
    if tracee.cores is not None:
        recording.cores = tracee.cores
        if tracee.pid in traced and traced[tracee.pid]([0])[0] < 0:  # the trace lacks the start core's instruction
            tracee.cores.paths.pop("start.core", None)
    if tracee.syscalls is not None:
        recording.syscall_results = tracee.syscalls.files(threads, traced)
    if tracee.registers is not None:
        recording.register_states = tracee.registers.files(threads, traced)
    return recording
