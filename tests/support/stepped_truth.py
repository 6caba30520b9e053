"""Ground truth for the value recovery: a real program single-stepped with ptrace, every register at every step.

``step_program(binary, steps)`` runs ``binary`` (ASLR off) to ``main``, then
single-steps it, keeping the address and registers before each instruction
(a REP instruction counts once, as in a PT trace), the stack around rsp every
SAMPLE_EVERY steps, and at the end the registers and every readable mapping
(what a core file would hold): the end state, *after* the last step.
"""

import os
import signal
import subprocess
from dataclasses import dataclass, field

from lldb_trace.capture.ptrace_recorder import ptrace
from lldb_trace.capture.ptrace_recorder.syscall_results import SyscallLog
from lldb_trace.elf_info import UNREADABLE_ELF, ElfInfo
from lldb_trace.values.machine_state import GENERAL, TRACKED, MachineState
from lldb_trace.values.recovery import SyscallResult

PIE_BASE = 0x555555554000  # where Linux loads a position-independent program when ASLR is off
SAMPLE_EVERY = 25
STACK_SAMPLE = 256  # bytes from rsp - 128
HEAP_SAMPLE = 2048  # bytes of the heap sampled: the first blocks malloc gave
_SKIPPED_MAPPINGS = ("[vvar]", "[vvar_vclock]", "[vsyscall]")


@dataclass
class Truth:
    addresses: list
    registers: list  # TRACKED name -> value, before each instruction, then after the last one
    samples: list = field(default_factory=list)  # (position, address, bytes) of the stack around rsp
    heap_samples: list = field(default_factory=list)  # (position, address, bytes) of the heap's first bytes
    end: MachineState | None = None
    start: MachineState | None = None
    syscalls: dict = field(default_factory=dict)  # position -> registers after it
    syscall_results: dict = field(default_factory=dict)  # position -> SyscallResult as lldb-trace record saves it
    exited: bool = False

    unchanging: object = None  # the end snapshot's read-only file-backed bytes (see _Snapshot.read_unchanging)

    def read_code(self, address, size):
        """What ModuleBytes.read_unchanging gives: code and constants from the modules' read-only segments."""
        return self.unchanging(address, size)


def _tracked(regs):
    values = {name: regs[name] for name in TRACKED if name in regs}
    values["rflags"] = regs["eflags"]
    return values


class _Snapshot:
    """Every readable mapping of a stopped process, copied (the process may go on or die after)."""

    def __init__(self, pid):
        self.regions, self.unchanging = [], []
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
            for line in maps:
                fields = line.split()
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if fields[1][0] != "r" or (len(fields) > 5 and fields[5] in _SKIPPED_MAPPINGS):
                    continue
                try:
                    memory.seek(start)
                    self.regions.append((start, memory.read(end - start)))
                except OSError:
                    continue
                if _read_only_segment(fields, end - start):
                    self.unchanging.append(self.regions[-1])

    def read(self, address, size):
        return _read(self.regions, address, size)

    def read_unchanging(self, address, size):
        return _read(self.unchanging, address, size)


def _read(regions, address, size):
    for start, data in regions:
        if start <= address < start + len(data):
            return data[address - start : address - start + size]
    return b""


def _read_only_segment(fields, length):
    """Whether a mapping holds only bytes of read-only PT_LOAD segments (RELRO is writable in the file: not)."""
    if "w" in fields[1] or len(fields) < 6:
        return fields[-1] == "[vdso]"
    if not fields[5].startswith("/"):
        return False
    offset = int(fields[2], 16)
    try:
        segments = ElfInfo.read(fields[5]).segments
    except UNREADABLE_ELF:  # not an ELF file: nothing vouches for its bytes
        return False
    overlapping = [s for s in segments if s.offset < offset + length and offset < s.offset + max(s.size, 1)]
    return bool(overlapping) and not any(s.writable for s in overlapping)


class _ProcessMemory:
    """The stepped process's memory as the recorder's SyscallLog reads it."""

    def __init__(self, pid):
        self.pid = pid

    def read(self, address, size):
        try:
            return _read_process(self.pid, address, size)
        except OSError:
            return b""


def _xcr0(pid):
    """The state components the kernel enabled, as a core's NT_X86_XSTATE note says (None: no such note)."""
    xstate = ptrace.get_xstate(pid)
    return int.from_bytes(xstate[464:472], "little") if xstate and len(xstate) >= 472 else None


def _result(saved):
    """A SyscallLog entry (JSON-ready) as the recovery takes it."""
    memory = [(address, bytes.fromhex(data)) for address, data in saved["memory"]]
    return SyscallResult(saved["registers"], memory, saved["unknownMemory"])


def _read_process(pid, address, size):
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        memory.seek(address)
        return memory.read(size)


def _heap_start(pid):
    """Where the process's [heap] mapping begins, or None before malloc made one."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            if line.rstrip().endswith("[heap]"):
                return int(line.split("-")[0], 16)
    return None


def _address(binary, symbol):
    info = ElfInfo(binary)
    return info.symbol(symbol) + (PIE_BASE if info.type in ("ET_DYN", 3) else 0)


def _run_to_main(pid, binary):
    main = _address(binary, "main")
    word = ptrace.peek_word(pid, main)
    ptrace.poke_word(pid, main, (word & ~0xFF) | 0xCC)
    ptrace.cont(pid)
    while True:
        _, status = os.waitpid(pid, 0)
        if not os.WIFSTOPPED(status):
            raise RuntimeError(f"{binary} ended before main")
        if os.WSTOPSIG(status) == signal.SIGTRAP and ptrace.get_rip(pid) == main + 1:
            ptrace.poke_word(pid, main, word)
            ptrace.set_rip(pid, main)
            return
        ptrace.cont(pid, 0 if os.WSTOPSIG(status) == signal.SIGTRAP else os.WSTOPSIG(status))


def compiler_for(source):
    """The compiler of a program's source: g++ for C++, gcc otherwise."""
    return "g++" if str(source).endswith(".cpp") else "gcc"


def build_program(source, flags, binary):
    """Compile ``source`` with debug information and ``flags`` into ``binary``, to be stepped."""
    subprocess.run([compiler_for(source), "-g", *flags, "-o", str(binary), str(source)], check=True)


def step_program(
    binary, steps, args=(), with_start=False, until=None, keep_registers=True, env=None, signal_at=None, fatal=None
):
    """Single-steps ``binary`` from main for ``steps`` instructions, or until it reaches function ``until``;
    without ``keep_registers`` only the addresses and the end state are kept (long runs, to time the engine);
    ``env``: the program's environment (default: this process's); ``signal_at``: ``(position, signal)``, the
    signal delivered just before the instruction at that position runs (as if it came from elsewhere then);
    ``fatal``: a signal (SIGSEGV) at which stepping ends as a core dump would, before the signal is delivered."""
    stop = _address(binary, until) if until else None
    pid = ptrace.launch(str(binary), list(args), env)
    try:
        _run_to_main(pid, binary)
        start = MachineState(_tracked(ptrace.get_regs(pid)), _Snapshot(pid).read, _xcr0(pid)) if with_start else None
        truth = Truth([], [], start=start)
        regs = ptrace.get_regs(pid)
        pending, repeating, log = 0, False, SyscallLog(pid, _ProcessMemory(pid)) if with_start else None
        while len(truth.addresses) < steps and regs["rip"] != stop:
            if signal_at is not None and signal_at[0] == len(truth.addresses) and not pending and not repeating:
                pending, signal_at = signal_at[1], None
            if not pending and not repeating:  # a position: the instruction about to run
                truth.addresses.append(regs["rip"])
                if keep_registers:
                    truth.registers.append(_tracked(regs))
                if len(truth.addresses) % SAMPLE_EVERY == 0:
                    low = regs["rsp"] - 128
                    truth.samples.append((len(truth.addresses) - 1, low, _read_process(pid, low, STACK_SAMPLE)))
                    heap = _heap_start(pid)
                    if heap is not None:
                        data = _read_process(pid, heap, HEAP_SAMPLE)
                        truth.heap_samples.append((len(truth.addresses) - 1, heap, data))
            if log is not None and not pending and not repeating:
                log.entering(pid, len(truth.addresses) - 1, regs["rip"])
            ptrace.step(pid, pending)
            _, status = os.waitpid(pid, 0)
            if not os.WIFSTOPPED(status):
                truth.exited = True
                break
            sig = os.WSTOPSIG(status)
            pending = 0 if sig == signal.SIGTRAP else sig
            previous, regs = regs, ptrace.get_regs(pid)
            if pending and not repeating and regs["rip"] == previous["rip"]:
                _unrun(truth)  # a signal came before the instruction ran: it runs when (if) the handler returns
            if pending and pending == fatal:
                break
            repeating = regs["rip"] == previous["rip"] and _is_rep(pid, previous["rip"])  # a REP's next round
            if not pending and _is_syscall(pid, previous["rip"]):
                truth.syscalls[len(truth.addresses) - 1] = _tracked(regs)
                if log is not None and pid in log.entries:
                    log.returned(pid, log.entries.pop(pid))
                    truth.syscall_results[len(truth.addresses) - 1] = _result(log.results[pid][-1])
        if truth.exited:  # the exit_group call never finished: no state after it
            raise RuntimeError(f"{binary} exited within {steps} steps")
        truth.registers.append(_tracked(regs))
        snapshot = _Snapshot(pid)
        truth.end = MachineState(_tracked(regs), snapshot.read, _xcr0(pid))
        truth.unchanging = snapshot.read_unchanging
        return truth
    finally:
        ptrace.end(pid)


def _unrun(truth):
    """Forgets the last position: a signal stop came before its instruction ran, as a trace would not show it."""
    position = len(truth.addresses) - 1
    del truth.addresses[position:]
    del truth.registers[position:]  # empty when the registers are not kept
    for samples in (truth.samples, truth.heap_samples):
        while samples and samples[-1][0] == position:
            samples.pop()


def _code(pid, address):
    return ptrace.peek_word(pid, address).to_bytes(8, "little")


def _is_rep(pid, address):
    code = _code(pid, address)
    prefixes = 0
    while code[prefixes] in (0xF2, 0xF3, 0x66, 0x48, 0x2E, 0x3E):
        prefixes += 1
    return any(b in (0xF2, 0xF3) for b in code[:prefixes]) and code[prefixes] in (
        0xA4,
        0xA5,
        0xAA,
        0xAB,
        0xAC,
        0xAD,
        0xA6,
        0xA7,
        0xAE,
        0xAF,
    )


def _is_syscall(pid, address):
    return _code(pid, address)[:2] == b"\x0f\x05"


def register_score(values, truth, first=0):
    """``(share of the GPR values known from position first on, [(position, name, shown, true)] of the wrong)``:
    how the tests and benchmarks/value_recovery.py score a recovery against the steps."""
    known, wrong, total = 0, [], 0
    for position in range(first, len(truth.addresses) + 1):
        shown = values.registers_at(position)
        for name in GENERAL:
            total += 1
            if shown[name] is not None:
                known += 1
                if shown[name] != truth.registers[position][name]:
                    wrong.append((position, name, shown[name], truth.registers[position][name]))
    return known / total, wrong
