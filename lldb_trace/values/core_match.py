"""Does a core file belong to a trace?  Checked when a trace is loaded, so a wrong core never gives a value.

A core is the state of a process where its trace ends.  One of another
process (pid), of another build (a module's build-id in the core's memory),
or of another moment (a thread missing, or standing where its trace does not
end) is refused with one line naming the mismatch.

Where a thread's trace ends is read from its last PSB period only
(ProcessTrace.end_of with the tail decoded first), so the check costs a
fraction of a second however long the trace.  A core's pc may be:

- the trace's last instruction: the core is the state *before* it ran (it faulted, or stopped at a
  breakpoint there): ``LAST``, the history position of that instruction;
- where the thread went on after it: its fall-through or direct target, any address after an indirect
  branch or a far transfer (a system call, whose return the kernel decides), or the address the trace's
  final disable event names; the core is the state *after* it: ``END``, the position after the last item.

When the trace itself says where the thread stood (a final disable event), only that address is
``END``.  A trace that ends in a gap (code the decoder could not read, lost packets), or with no final
disable event at all (a file cut short between packets), says nothing of where the thread went: any pc is
``END``, and no value is carried across the gap.  A core whose pc is a
REP string instruction may have stopped partway through its iterations (a fault in the middle of a
``rep movsb``): the value layer then takes the core as the state after that instruction
(values/process_values.py), so what it changes is unknown before it.
"""

from dataclasses import dataclass, replace

from ..bundle.model import ThreadStop
from ..capture.ptrace_recorder.stop_signal import describe
from ..decode.cursor import TraceCursor
from ..errors import LldbTraceError
from ..libipt.enums import EventType
from ..process_trace import ProcessTrace
from ..x86.instructions import Transfer
from .core_file import open_core
from .register_states import RegisterStatesError, read_register_states
from .syscall_file import read_syscall_results

LAST = "last"  # the core holds the state at the trace's last instruction, before it ran
END = "end"  # the core holds the state after the trace's last item: where the thread stood


class CoreMismatchError(LldbTraceError):
    """The core is not of the process, build or moment the trace ends at."""


@dataclass(frozen=True)
class ThreadEnd:
    """How a thread's trace ends: ``last`` is its last instruction's address (None: it has none), ``stands`` the
    address the trace says the thread stood at after it (a disable event's, or a gap's), else None."""

    last: int | None
    stands: int | None


def thread_end(process_trace, tid):
    """The ThreadEnd of ``tid``, from the end of its trace only; None when the thread has no trace."""
    end = process_trace.end_of(tid, 1)
    if end is None:
        return None
    decoded = end.decoded
    if not decoded.item_count:
        return ThreadEnd(None, decoded.end_ip)
    last_item = TraceCursor(decoded, process_trace.expander).item()
    if last_item.gap is not None or cut_off(decoded):  # its decode stopped (code it could not read, lost packets),
        return ThreadEnd(None, None)  # or its trace did: the thread went on
    stands = decoded.end_ip if decoded.end_ip != last_item.address else None
    return ThreadEnd(last_item.address, stands)


def cut_off(decoded):
    """Whether the trace ends while the thread was running: no event stops tracing after its last item.  A trace
    of user space always ends with one (the kernel entry of an exit, a fault, a signal, a stop); a trace file cut
    short at a packet boundary does not, and what the thread ran after it is as unknown as after a gap."""
    stops = decoded.events_of((EventType.DISABLED, EventType.ASYNC_DISABLED))
    return decoded.item_count > 0 and (not stops or stops[-1][0] != decoded.item_count)


def core_position(pc, end, classifier):
    """LAST, END, or None when ``pc`` is not where a thread whose trace ends as ``end`` can stand."""
    if end.stands is not None:
        return END if pc == end.stands else LAST if pc == end.last else None
    if end.last is None:
        return END  # the trace ends in a gap: nothing says where the thread stood; the values start after the gap
    insn = classifier[end.last]
    if insn.transfer in (Transfer.INDIRECT, Transfer.FAR):
        return LAST if pc == end.last else END
    successors = {insn.straight_successor}
    if insn.transfer == Transfer.CONDITIONAL:
        successors = {insn.target, insn.next_address}
    return END if pc in successors else LAST if pc == end.last else None


def check_core(core, process_trace):
    """``{tid: LAST or END}`` for the threads of ``process_trace`` in ``core``; CoreMismatchError if the core does
    not belong to the trace (another pid, another build of a module, a thread missing or elsewhere)."""
    process = process_trace.process
    if core.pid != process.pid:
        raise CoreMismatchError(
            f"{core.path} is a core of process {core.pid}, but the trace is of process {process.pid}: "
            f"give the core of process {process.pid}"
        )
    _check_builds(core, process)
    positions = {}
    for tid in process_trace.tids:
        stop = process_trace.thread_stop(tid)
        core_thread = core.thread(tid)
        if stop is not None and stop.exited and core_thread is None:
            continue  # it ended before the core was taken
        end = thread_end(process_trace, tid)
        if end is None:
            continue  # no trace of its own: nothing says where it stood
        if core_thread is None:
            tids = ", ".join(str(thread.tid) for thread in core.threads)
            raise CoreMismatchError(
                f"{core.path}: the core has no thread {tid} (its threads: {tids}), which the trace follows to its "
                "end: give the core taken where the trace ends"
            )
        pc = core_thread.registers["rip"]
        position = core_position(pc, end, process_trace.expander.classifier)
        if position == END and not _may_stand_after(process_trace, end, pc, core_thread.registers):
            position = None
        if position is None:
            raise CoreMismatchError(
                f"{core.path}: thread {tid} stands at {pc:#x} in the core, but its trace ends {_where(end)}: "
                "the core was taken elsewhere; give the core taken where the trace ends"
            )
        positions[tid] = position
    return positions


def _check_builds(core, process, role=""):
    """CoreMismatchError where a module's build-id in the core's memory is not the traced build's (``role``: how
    the message names the core, after its path)."""
    for module in process.modules:
        expected = module.build_id or (module.uuid and module.uuid.replace("-", "").lower())
        found = core.build_id_at(module.load_address)
        if not (expected and found and found != expected):
            continue
        where = f"{core.path}{role}: {module.system_path} at {module.load_address:#x} has build-id {found} in the core"
        if not module.uuid:  # the file's own: which is wrong?
            raise CoreMismatchError(
                f"{where}, but the file is build-id {expected}, and the trace names none: give the module file of "
                "the build that ran (or its uuid in the bundle), or the core of the traced run"
            )
        raise CoreMismatchError(
            f"{where}, but {expected} in the trace: the core is of another build; give the core of the traced run"
        )


_SYSTEM_CALL = b"\x0f\x05"
_RT_SIGRETURN = 15
_SIGRETURN_NUMBER = (b"\x48\xc7\xc0\x0f\x00\x00\x00", b"\xb8\x0f\x00\x00\x00")  # mov rax, 15; mov eax, 15


def _may_stand_after(process_trace, end, pc, registers):
    """Whether a thread whose trace ends with a system call (an exit, most often) may stand at ``pc`` after it:
    where the instruction returns to, unless the call was rt_sigreturn, which returns anywhere: the core's
    orig_rax names the call, or (a fault of the code it returned to: orig_rax -1) the trampoline's ``mov rax, 15``
    right before the syscall.  Any other far transfer, or an indirect branch, may go anywhere."""
    if end.stands is not None or end.last is None:
        return True
    read = process_trace.module_bytes.read_unchanging
    if read(end.last, 2) != _SYSTEM_CALL:
        return True
    trampoline = any(read(end.last - len(code), len(code)) == code for code in _SIGRETURN_NUMBER)
    return pc == end.last + len(_SYSTEM_CALL) or registers.get("orig_rax") == _RT_SIGRETURN or trampoline


def _where(end):
    if end.last is None:
        if end.stands is None:
            return "in a gap or with no instruction: nothing says where the thread stood"
        return f"in a gap, with the thread at {end.stands:#x}"
    after = f" and the thread at {end.stands:#x}" if end.stands is not None else ""
    return f"after the instruction at {end.last:#x}{after}"


def with_checked_cores(bundle, core_path=None):
    """``bundle`` with each process's core file checked and its threads' core positions set (Thread.core_position);
    the threads' register states and system calls' results are read, to refuse a bad one now.

    ``core_path`` (``trace load --core``) is the core of the process whose pid it has, or of the only process.
    Raises CoreMismatchError, core_file.CoreFileError, RegisterStatesError or SyscallResultsError; the bundle is
    left as it was.
    """
    processes, given = list(bundle.processes), None
    if core_path is not None:
        core = given = open_core(core_path)
        k = next((k for k, p in enumerate(processes) if p.pid == core.pid), 0 if len(processes) == 1 else None)
        if k is None:
            pids = ", ".join(str(p.pid) for p in processes) or "none"
            raise CoreMismatchError(
                f"{core.path} is a core of process {core.pid}, which {bundle.path} does not trace (its processes: "
                f"{pids}): give the core of one of them"
            )
        processes[k] = replace(processes[k], core_file=core.path)
    for k, process in enumerate(processes):
        start, end = (
            (given if given is not None and path == given.path else open_core(path)) if path else None
            for path in (process.start_core_file, process.core_file)
        )  # the core given is opened once
        if start is not None:
            _check_start_core(start, process)
        if end is not None:
            core = end
            positions = check_core(core, ProcessTrace(bundle, process, tail_first_bytes=0))
            threads = tuple(
                replace(t, core_position=positions.get(t.tid), stop=t.stop or _core_stop(core, t.tid))
                for t in process.threads
            )
            processes[k] = replace(process, threads=threads)
        for thread in process.threads:  # the other known states, read now: a bad one is refused at load
            if thread.register_states is not None:
                _check_states(thread.register_states, thread.tid, start, end)
            if thread.syscall_results is not None:
                read_syscall_results(thread.syscall_results)
    return replace(bundle, processes=tuple(processes))


# What a core at the same pc as a recorded state cannot have changed since: a core partway through a rep string
# instruction has moved rcx, rsi and rdi; one at a system call the kernel restarts, rax, rcx and r11
_UNMOVED = ("rbx", "rbp", "rsp", "r12", "r13", "r14", "r15")


def _check_states(path, tid, start, end):
    """Register states of another run are refused: where the first state stands at the start core's pc, or the
    last at the end core's, the registers nothing there moves are the core's."""
    instructions, rows, names = read_register_states(path, tid)
    first = rows[0] if len(rows) and instructions[0] == 0 else None  # a file of the trace's end holds no start
    for core, row in ((start, first), (end, rows[-1] if len(rows) else None)):
        thread = core.thread(tid) if core is not None and row is not None else None
        if thread is not None:
            state = dict(zip(names, (int(value) for value in row), strict=True))
            if state["rip"] != thread.registers.get("rip"):
                continue
            differ = [
                name for name in _UNMOVED if name in state and state[name] != thread.registers.get(name, state[name])
            ]
            if differ:
                name = differ[0]
                raise RegisterStatesError(
                    f"{path}: at pc {state['rip']:#x} its {name} is {state[name]:#x}, but {core.path} says "
                    f"{thread.registers[name]:#x}: the states and the core are of different runs; record again, or "
                    "remove the thread's registerStates"
                )


def _core_stop(core, tid):
    """How the core says thread ``tid`` stopped, for a trace that does not say (a perf.data): the signal the
    kernel was delivering to it, worded as LLDB words it, at the core's pc; None without a signal."""
    thread = core.thread(tid)
    if thread is None or not thread.signal:
        return None
    info = core.siginfo if core.siginfo is not None and core.siginfo.signo == thread.signal else None
    description = describe(thread.signal, info.code, info.fault_address or 0) if info else None
    return ThreadStop(thread.signal, description, thread.registers.get("rip"))


def _check_start_core(core, process):
    if core.pid != process.pid:
        raise CoreMismatchError(
            f"{core.path} (the state where recording started) is a core of process {core.pid}, but the trace is of "
            f"process {process.pid}: give the start state of process {process.pid}"
        )
    _check_builds(core, process, " (the state where recording started)")
