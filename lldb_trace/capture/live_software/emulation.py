"""Predicting a thread's path by emulating it, so the live recorder stops once per stretch, not per branch.

Stopping the real thread at every branch costs an LLDB stop (about 0.65 ms) per
branch.  Instead, from a stop, the thread's registers and memory are loaded
into unicorn (QEMU's CPU as a library) and run ahead; the instructions it
runs are the predicted path.  The real thread then runs to the path's end
with one breakpoint, and its registers there are compared with the
emulator's.  The real CPU still executes everything: the emulator only
predicts, so a wrong prediction costs a gap in the trace, never the
debuggee's state.

The emulator stops before anything whose result it cannot know: a system
call or other far transfer, instructions that read the machine (cpuid,
rdtsc, rdrand...), x87 and AVX code (their state is not loaded), memory
that something else may change (shared mappings, the vvar page), the vdso, a fault,
and the addresses the debugger watches.  The real thread takes it from
there, branch by branch.
"""

import itertools
import re
import time
from collections import Counter
from dataclasses import dataclass
from functools import cache

import capstone

GENERAL = (
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
)  # fmt: skip
CHECKED_FLAGS = 0xCD5  # CF PF AF ZF SF DF OF: what the program computes
_DEBUG_FLAGS = 0x10100  # TF and RF, which debugging sets
VECTOR = tuple(f"xmm{i}" for i in range(16))
LOADED = (*GENERAL, "rflags", "fs_base", "gs_base", "mxcsr", *VECTOR)


@cache
def _unicorn():
    """``(unicorn, its x86 constants, register name -> unicorn's number)``, imported by the first emulation:
    importing unicorn costs every LLDB start-up (the plugin loads this module) 50 ms and 9 MB otherwise."""
    import unicorn
    from unicorn import x86_const

    return unicorn, x86_const, {name: getattr(x86_const, f"UC_X86_REG_{name.upper()}") for name in LOADED}


MAX_SECONDS = 2.0  # one prediction's emulation time: the debugger does not answer meanwhile
MAX_BLOCKS = 4_000_000  # and its length: 8 bytes a block, about 20 million instructions
PAGE = 4096
_UNKNOWN = object()
_MMX_REGISTER = re.compile(r"\bmm[0-7]\b")
# The kernel changes or traps these; the vdso's clock code retries until it reads the time within a kernel tick,
# so the live recorder runs it untraced, at full speed, and predictions stop at its door.
_NOT_EMULATED = ("[vvar]", "[vvar_vclock]", "[vsyscall]", "[vdso]")
_UNPREDICTABLE = frozenset((
    "syscall", "sysenter", "int", "int1", "int3", "into",  # into the kernel
    "cpuid", "rdtsc", "rdtscp", "rdrand", "rdseed", "rdpid", "rdpmc", "rdpkru", "xgetbv",  # read the machine
    "xsave", "xsavec", "xsaveopt", "xsaves", "xrstor", "xrstors", "xsave64", "xsavec64", "xsaveopt64",
    "xsaves64", "xrstor64", "xrstors64", "fxsave", "fxrstor", "fxsave64", "fxrstor64",  # x87/AVX state
    "xbegin", "xend", "xabort", "xtest",  # transactions
    "rdfsbase", "rdgsbase", "wrfsbase", "wrgsbase", "wrpkru", "umonitor", "umwait", "tpause", "enqcmd",
))  # fmt: skip


@dataclass
class Prediction:
    """A predicted stretch from the thread's pc to ``end``, as the instruction addresses of each block run.

    The thread stands at ``end`` after the last of them; it passes ``end`` ``arrivals`` times in
    all (a loop may come back to it), and then holds ``registers``.
    """

    blocks: list  # tuples of instruction addresses; the first instruction is where the thread stands
    end: int
    arrivals: int
    registers: dict

    def steps(self):
        """Where the thread stands after each instruction: the addresses ahead after the first (see Lookahead)."""
        addresses = itertools.chain.from_iterable(self.blocks)
        next(addresses)
        yield from addresses
        yield self.end

    @property
    def instructions(self):
        return sum(map(len, self.blocks))


def matches(expected, actual):
    """Whether a thread's general registers and flags are the predicted ones."""
    return all(
        (actual.get(name, 0) & CHECKED_FLAGS) == (value & CHECKED_FLAGS)
        if name == "rflags"
        else actual.get(name) == value
        for name, value in expected.items()
    )


def is_predictable(mnemonic, operands=""):
    """Whether the emulator computes this instruction as the CPU does, from the state it is given.

    x87, MMX (whose registers are the x87 ones) and VEX code are not: that state is not loaded.
    """
    return not (mnemonic in _UNPREDICTABLE or mnemonic[0] in "fv" or _MMX_REGISTER.search(operands))


class Predictor:
    """Runs a stopped thread ahead in unicorn.  One per traced process: it caches decoded code."""

    def __init__(self, read_memory):
        self.read_memory = read_memory
        self._disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self.decoded_blocks = {}  # (address, size) -> instruction addresses, or None if it must not be emulated
        self.hopeless = set()  # pcs the emulator could not run a single instruction from (AVX code, say)

    def predict(self, registers, mappings, watched):
        """The thread's path from ``registers`` (names as in LOADED) until something stops the emulator.

        ``mappings`` are the process's (process_view.Mapping); ``watched`` addresses are never run.
        None when the emulator cannot run a single instruction from here.
        """
        run = _Run(self, registers, mappings, watched)
        run.execute()
        if run.out_of_time:
            run = self._rerun_to_cut(run, registers, mappings, watched)
            if run is None:
                return None
        blocks, end = run.blocks, run.end
        if run.faulted and blocks and end in blocks[-1]:
            blocks[-1] = blocks[-1][: blocks[-1].index(end)]  # the faulting instruction did not run
        if not any(blocks):
            self.hopeless.add(registers["rip"])
            return None
        arrivals = sum(block.count(end) for block in blocks) - (blocks[0][0] == end) + 1
        return Prediction(blocks, end, arrivals, run.general_registers())

    def _rerun_to_cut(self, run, registers, mappings, watched):
        """Out of time inside a loop, the prediction must end where the real thread passes few times.

        The real thread runs to the end with a breakpoint that every pass stops at, so the
        cut is the last run of the block seen least often in the prediction's second half
        (an outer loop's block, in nested loops).  Registers there come from emulating again,
        from the same start, up to that block.
        """
        starts = [block[0] for block in run.blocks]
        counts = Counter(itertools.chain.from_iterable(run.blocks))  # a block's start may lie inside others
        best = None
        seen = set()
        for index in range(len(starts) - 1, len(starts) // 2, -1):
            address = starts[index]
            if address not in seen:
                seen.add(address)
                if best is None or counts[address] < counts[starts[best]]:
                    best = index
        if best is None:
            return None
        again = _Run(self, registers, mappings, watched, stop_before=best)
        again.execute()
        return again if again.blocks == run.blocks[:best] and again.end == starts[best] else None

    def block(self, address, size, code):
        """The instruction addresses of a translated block, or None if it holds one the emulator must not run."""
        addresses = []
        for insn_address, _size, mnemonic, operands in self._disassembler.disasm_lite(code, address):
            if not is_predictable(mnemonic, operands):
                addresses = None
                break
            addresses.append(insn_address)
        self.decoded_blocks[(address, size)] = addresses = tuple(addresses) if addresses is not None else None
        return addresses


class _Run:
    """One emulation from one stop: a fresh unicorn whose pages are read from the process on first touch."""

    def __init__(self, predictor, registers, mappings, watched, stop_before=None):
        self.predictor = predictor
        self.known_blocks = predictor.decoded_blocks
        self.stop_before = stop_before  # a block count: emulate again up to an earlier run's cut
        self.mappings = sorted(
            (m for m in mappings if "r" in m.perms and m.perms[3] == "p" and m.path not in _NOT_EMULATED),
            key=lambda m: m.start,
        )
        self.faulted = self.out_of_time = False
        self.blocks = []  # the instruction addresses of each block run
        self.end = None  # where the emulator stopped
        self.deadline = time.perf_counter() + MAX_SECONDS if stop_before is None else float("inf")
        unicorn, x86_const, numbers = _unicorn()
        uc = self.uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        uc.ctl_set_cpu_model(x86_const.UC_CPU_X86_HASWELL)  # BMI, LZCNT, MOVBE decode as on any x86-64 since 2013
        for name, value in registers.items():
            uc.reg_write(numbers[name], value & ~_DEBUG_FLAGS if name == "rflags" else value)
        self.start = registers["rip"]
        if watched:
            uc.ctl_exits_enabled(True)
            uc.ctl_set_exits(list(watched))
        uc.hook_add(unicorn.UC_HOOK_MEM_UNMAPPED, self._map_page)
        uc.hook_add(unicorn.UC_HOOK_BLOCK, self._entered)

    def execute(self):
        unicorn, x86_const, _numbers = _unicorn()
        try:
            self.uc.emu_start(self.start, 0)
        except unicorn.UcError:
            self.faulted = True
        self.end = self.uc.reg_read(x86_const.UC_X86_REG_RIP)

    def general_registers(self):
        _unicorn_module, _x86_const, numbers = _unicorn()
        return {name: self.uc.reg_read(numbers[name]) for name in (*GENERAL, "rflags")}

    def _entered(self, uc, address, size, _data):
        addresses = self.known_blocks.get((address, size), _UNKNOWN)
        if addresses is _UNKNOWN:
            addresses = self.predictor.block(address, size, bytes(uc.mem_read(address, size)))
        blocks = self.blocks
        if addresses is None or len(blocks) == self.stop_before:
            uc.emu_stop()  # stopping in the block hook stops before the block runs
            return
        if len(blocks) >= MAX_BLOCKS or (not len(blocks) & 0xFFF and time.perf_counter() > self.deadline):
            self.out_of_time = self.stop_before is None
            uc.emu_stop()
            return
        blocks.append(addresses)

    def _map_page(self, uc, _access, address, _size, _value, _data):
        page = address & ~(PAGE - 1)
        mapping = self._mapping_at(page)
        if mapping is None:
            return False
        data = self.predictor.read_memory(page, PAGE)
        if len(data) != PAGE:
            return False
        unicorn = _unicorn()[0]
        protection = unicorn.UC_PROT_NONE
        for flag, bit in (("r", unicorn.UC_PROT_READ), ("w", unicorn.UC_PROT_WRITE), ("x", unicorn.UC_PROT_EXEC)):
            if flag in mapping.perms:
                protection |= bit
        uc.mem_map(page, PAGE, protection)
        uc.mem_write(page, data)
        return True

    def _mapping_at(self, address):
        for mapping in self.mappings:
            if mapping.start <= address < mapping.end:
                return mapping
        return None
