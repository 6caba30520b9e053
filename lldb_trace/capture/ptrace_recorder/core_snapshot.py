"""The recorded process as a core snapshot (values.core_writer), taken where recording starts and ends.

A core shows every thread at one moment, so before the end core the threads that are not already
stopped are stopped (SIGSTOP, then a wait for each): a recorded thread whose step completes meanwhile,
or that was blocked in a system call (it is then inside the kernel, past the ``syscall`` instruction,
as a kernel-made core shows it), has its trace carried to where the core shows it, so the trace ends
where the core's registers say the thread stands.
"""

import contextlib
import os
import signal
import tempfile

from ...values.core_writer import CoreRegion, CoreSnapshot, CoreThread, CoreWriteError, dump_core
from ..process_view import read_maps
from . import ptrace

EXIT_GROUP = 231
_FATAL_BY_DEFAULT = frozenset(range(1, 32)) - {
    signal.SIGCHLD,
    signal.SIGCONT,
    signal.SIGURG,
    signal.SIGWINCH,
    signal.SIGSTOP,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
}


def thread_state(tid, sig=0):
    """Thread ``tid`` (ptrace-stopped) as a core thread; with ``sig``, the signal it is stopped for."""
    siginfo = None
    if sig:
        try:
            siginfo = ptrace.get_siginfo(tid)
        except ptrace.PtraceError:
            siginfo = None
    return CoreThread(tid, ptrace.get_regs(tid), ptrace.get_fpregs(tid), sig, siginfo, ptrace.get_xstate(tid))


def snapshot(pid, threads, memory, program, args):
    """The process ``pid`` (every thread in ``threads`` stopped) with its mappings and auxv."""
    modified = modified_mappings(pid)
    regions = [CoreRegion(m.start, m.end, m.perms, m.path, m.offset, modified.get(m.start)) for m in read_maps(pid)]
    try:
        with open(f"/proc/{pid}/auxv", "rb") as auxv:
            auxv_bytes = auxv.read()
    except OSError:
        auxv_bytes = b""
    return CoreSnapshot(pid, threads, regions, memory.read, auxv_bytes, program, tuple(args), os.getpid())


def modified_mappings(pid):
    """``{start: whether the process wrote to that mapping}`` from /proc/PID/smaps (its anonymous, copied pages);
    {} when /proc cannot tell."""
    modified, start = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as smaps:
            for line in smaps:
                if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                    start = int(line.split("-", 1)[0], 16)
                elif line.startswith("Anonymous:") and start is not None:
                    modified[start] = int(line.split()[1]) > 0
    except (OSError, ValueError):
        return {}
    return modified


def fatal(tid, sig):
    """Whether signal ``sig``, delivered to ``tid`` without a handler, ends the process (not ignored, default kills)."""
    return sig in _FATAL_BY_DEFAULT and not (_ignored_signals(tid) >> (sig - 1) & 1)


def tasks(pid):
    """The threads of process ``pid``, the main one first."""
    try:
        listed = sorted(int(name) for name in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []
    return sorted(listed, key=lambda tid: tid != pid)


def halt_others(pid, stopped, recorders, gone):
    """Stop every thread of ``pid`` not in ``stopped``; returns ``{tid: wait status}`` of those halted.

    ``recorders`` (tid -> ThreadRecorder or None) get the instruction each thread ran meanwhile;
    ``gone(tid, status)`` is told of a thread that ended instead of stopping.
    """
    halted = {}
    for tid in tasks(pid):
        if tid in stopped:
            continue
        try:
            status = _stop(pid, tid)
        except (OSError, ChildProcessError):
            continue  # already gone
        if not os.WIFSTOPPED(status):
            gone(tid, status)
            continue
        recorder = recorders.get(tid)
        if recorder is not None and not recorder.truth.ended:
            rip = ptrace.get_rip(tid)
            if rip != recorder.current:
                recorder.stepped(rip)  # its step ended, or it entered the kernel at a syscall
        halted[tid] = status
    return halted


def _stop(pid, tid):
    """Stop thread ``tid``; its wait status.  A thread already in a ptrace stop whose report was taken (a Ctrl-C
    can land between the wait's return and its use) gets no SIGSTOP: it would never be reported."""
    if _state(tid) == "t":
        found, status = os.waitpid(tid, ptrace.WALL | os.WNOHANG)
        return status if found else 0x57F  # stopped (by SIGTRAP, as far as the trace is concerned)
    ptrace.stop_thread(pid, tid)
    return os.waitpid(tid, ptrace.WALL)[1]


def _state(tid):
    try:
        with open(f"/proc/{tid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _ignored_signals(tid):
    try:
        with open(f"/proc/{tid}/status") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


class Cores:
    """The recording's cores, ``start.core`` and ``end.core``, written as they are taken (the process is gone by
    the time the bundle is written) into temporary files until the bundle takes them.  Each file is unlinked at
    once and held open, named through /proc/self/fd: nothing is left behind however the recorder ends (a
    SIGKILL included)."""

    def __init__(self, pid, memory, program, args):
        self.pid, self.memory, self.program, self.args = pid, memory, program, list(args)
        self._held = []  # the written cores' files, open
        self.paths = {}  # name -> path of the written core
        self.problems = []  # why a core could not be written

    def start(self):
        """The core where recording starts: the main thread at its first recorded instruction."""
        self._write("start.core", [thread_state(self.pid)])

    def end(self, tid, sig, recorders, gone):
        """The core where recording ends (once): ``tid``, stopped, the thread that ends it (None: none does),
        pending ``sig``; the other threads are stopped first (see :func:`halt_others`)."""
        if "end.core" in self.paths or any(p.startswith("end.core") for p in self.problems):
            return
        halted = halt_others(self.pid, {tid} if tid else set(), recorders, gone)
        threads = [thread_state(tid, sig)] if tid else []
        for other in halted:
            with contextlib.suppress(ptrace.PtraceError):
                threads.append(thread_state(other))
        self._write("end.core", threads)
        for other, status in halted.items():
            if status >> 16 == ptrace.PTRACE_EVENT_EXIT:
                with contextlib.suppress(ptrace.PtraceError):
                    ptrace.cont(other)  # it was exiting: let it go on

    def process_ends_with(self, tid):
        """Whether ``tid``, stopped at its exit event, ends the process normally (exit_group, or the last thread)."""
        if not os.WIFEXITED(ptrace.event_message(tid)):
            return False
        return ptrace.get_regs(tid)["orig_rax"] == EXIT_GROUP or tasks(self.pid) == [tid]

    def _write(self, name, threads):
        try:
            held = tempfile.TemporaryFile(prefix=f"lldb-trace-{name}-")  # noqa: SIM115 (held open)
        except OSError as error:
            self.problems.append(f"{name}: cannot make a temporary file in {tempfile.gettempdir()}: {error.strerror}")
            return
        try:
            dump_core(snapshot(self.pid, threads, self.memory, self.program, self.args), held)
            held.flush()
        except CoreWriteError as error:
            held.close()
            self.problems.append(f"{name}: {error}")
            return
        except OSError as error:
            held.close()
            self.problems.append(f"{name}: cannot write the core in {tempfile.gettempdir()}: {error.strerror}")
            return
        except BaseException:
            held.close()
            raise
        self._held.append(held)
        self.paths[name] = f"/proc/self/fd/{held.fileno()}"
