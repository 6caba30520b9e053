"""Each system call's results, as the recorder saw them: what a trace cannot tell about a ``syscall``.

A trace shows that a thread ran ``syscall``, not what the kernel handed back.  The recorder reads the
registers before and after it (the result: rax, rcx and r11, and any other register that changed, as
rt_sigreturn or arch_prctl change them) and, for the calls whose output buffers are known, the bytes
the kernel wrote there, read after the call and sized by its result.  A call that may write user memory
in a way not listed here is marked ``unknownMemory``: the recovery then forgets what memory held.

Memory the kernel maps or unmaps: the content of a new mapping (mmap, mremap, brk's new pages, what
madvise(MADV_DONTNEED) dropped) is read after the call and recorded as written there, up to
MOST_MAPPED bytes (more, or a part that cannot be read: ``unknownMemory``).  munmap and mprotect change
no byte that can still be read.  clone with CLONE_VM and vfork let another task write the same memory
untraced: ``unknownMemory``; so does a write to a process's ``/proc/PID/mem`` (which the table takes for
a file's).  One file per thread (``syscalls/<tid>.json``): a list of
``{"instruction": N, "registers": {...}, "memory": [[address, "hex"], ...], "unknownMemory": bool}``, N
the thread's instructions before the ``syscall`` (its ground truth's index).  A signal delivered to a
handler is the kernel writing too: ``{"instruction": N, "signalFrame": [[address, "hex"]]}`` is the stack
it wrote, as it stands before the handler's first instruction, the N-th.
"""

import json
import os

from ...values.machine_state import TRACKED
from ...x86 import syscall_memory
from . import ptrace

SYSCALL = b"\x0f\x05"
MOST_MAPPED = 1 << 20
MOST_FRAME = 1 << 16  # a signal frame with AVX-512 state is about 3.5 KiB
_RED_ZONE = 128  # bytes below rsp a signal frame leaves alone (the x86-64 ABI)
_ALWAYS = ("rax", "rcx", "r11")  # what every syscall sets: its result, the return address, the flags
_NEW_CONTENTS = frozenset({9, 12, 25})  # mmap, brk, mremap: see SyscallLog._mapped
_MREMAP_DONTUNMAP = 4
# ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK as rax holds them: a call stopped by a signal
_RESTART_CODES = frozenset((1 << 64) - code for code in (512, 513, 514, 516))
# write, pwrite64, writev, pwritev, pwritev2; sendfile; splice, copy_file_range: the argument that is the
# descriptor written to, which may be a process's memory
_DESTINATIONS = {1: 0, 18: 0, 20: 0, 296: 0, 328: 0, 40: 0, 275: 2, 326: 2}


class SyscallLog:
    """Every recorded thread's syscall results, gathered as the threads step over ``syscall``."""

    def __init__(self, pid, memory):
        self.memory, self.pid = memory, pid
        self.entries = {}  # tid -> (instruction index, registers) of a thread standing at a syscall
        self.stopped = {}  # tid -> the entry of a call a signal stopped: it runs again, or a handler takes over
        self.results = {}  # tid -> [result]
        self._heap_end = _heap_end(pid)  # where the brk heap's pages end

    def entering(self, tid, index, address):
        """Thread ``tid`` stands at a far transfer at ``address``, its ``index``-th instruction: note a syscall."""
        if self.memory.read(address, 2) == SYSCALL:
            self.entries[tid] = (index, ptrace.get_regs(tid))

    def returned(self, tid, entry):
        """Thread ``tid`` stepped over the syscall of ``entry`` (what ``entering`` noted).  A call a signal stopped
        (rax one of the kernel's restart codes, which no program sees) is not done: the kernel runs it again once
        the signal is ignored (``resumed``) or a handler returns; a handler taking the signal ends it (``dropped``)."""
        index, before = entry
        after = ptrace.get_regs(tid)
        if after["rax"] in _RESTART_CODES:
            self.stopped[tid] = entry
            return
        registers = {}
        for name in TRACKED:
            source = ptrace.PTRACE_NAMES.get(name, name)
            if name in _ALWAYS or after[source] != before[source]:
                registers[name] = after[source]
        written = self._written(before, after)
        memory = [] if written is None else [[address, data.hex()] for address, data in written]
        result = {"instruction": index, "registers": registers, "memory": memory, "unknownMemory": written is None}
        self.results.setdefault(tid, []).append(result)

    def resumed(self, tid):
        """Thread ``tid`` stepped again after the signal that stopped its call was ignored: the kernel ran the call
        again, and this is what it left.  Whether a call was pending (the state after it is new too)."""
        entry = self.stopped.pop(tid, None)
        if entry is not None:
            self.returned(tid, entry)
        return entry is not None

    def dropped(self, tid):
        """A handler takes the signal that stopped thread ``tid``'s call: what the call left is not recorded."""
        self.stopped.pop(tid, None)

    def signal_frame(self, tid, index, interrupted_rsp):
        """Thread ``tid`` stands at the first instruction of a signal handler, its ``index``-th: keep the stack the
        kernel wrote below the interrupted rsp and its red zone (the return trampoline's address, ucontext,
        siginfo, the saved vector state), as known before that instruction.  A handler on an alternate stack
        (sigaltstack) is elsewhere: not kept."""
        rsp = ptrace.get_regs(tid)["rsp"]
        top = interrupted_rsp - _RED_ZONE
        if not 0 < top - rsp <= MOST_FRAME:
            return
        kept = self.results.setdefault(tid, [])
        if kept and kept[-1]["instruction"] == index and "signalFrame" in kept[-1]:
            # a second signal delivered before the first handler ran an instruction (both were pending): the
            # kernel wrote both frames at this instruction, one entry holds them
            (low, old), *_ = kept.pop()["signalFrame"]
            rsp, top = min(rsp, low), max(top, low + len(old) // 2)
        data = self.memory.read(rsp, top - rsp)
        if len(data) == top - rsp:
            kept.append({"instruction": index, "signalFrame": [[rsp, data.hex()]]})

    def files(self, tids, traced):
        """``{tid: JSON text}`` of the threads among ``tids`` that made a syscall, each named by where the thread's
        trace holds its instruction (``traced[tid]``: GroundTruth.traced); one the trace does not hold is left out."""
        found = {}
        for tid in tids:
            results = self.results.get(tid, [])
            where = traced[tid]([result["instruction"] for result in results]).tolist()
            kept = [result | {"instruction": index} for result, index in zip(results, where, strict=True) if index >= 0]
            if kept:
                found[tid] = json.dumps(kept) + "\n"
        return found

    def _written(self, before, after):
        """``[(address, bytes)]`` the kernel wrote, or None when it may have written more."""
        number = syscall_memory.call_number(before["rax"])
        arguments = tuple(before[n] for n in ("rdi", "rsi", "rdx", "r10", "r8", "r9"))
        result = after["rax"] - (1 << 64) if after["rax"] >> 63 else after["rax"]
        if number in _DESTINATIONS and result > 0 and self._into_memory(arguments[_DESTINATIONS[number]]):
            return None
        if number in _NEW_CONTENTS:
            ranges = self._mapped(number, arguments, result)
        else:
            ranges = syscall_memory.written(number, arguments, result, self.memory.read)
        if ranges is None:
            return None
        written = []
        for address, size in ranges:
            data = self.memory.read(address, size)
            if len(data) < size:
                return None  # a buffer that cannot be read back: what the kernel wrote there is unknown
            written.append((address, data))
        return written

    def _into_memory(self, descriptor):
        """Whether ``descriptor`` is open on a process's memory (``/proc/PID/mem``: writing it writes memory)."""
        try:
            target = os.readlink(f"/proc/{self.pid}/fd/{descriptor}")
        except OSError:
            return False
        return target.startswith("/proc/") and target.endswith("/mem")

    def _mapped(self, number, arguments, result):
        """The new contents of mapped memory after mmap, brk or mremap (see the module docstring)."""
        if number == 12:
            previous, self._heap_end = self._heap_end, _page_up(result)
            if previous is None:
                return None
            ranges = [(previous, self._heap_end - previous)] if self._heap_end > previous else []
        elif result < 0:
            return []
        else:
            ranges = [(result, _page_up(arguments[1] if number == 9 else arguments[2]))]
            if number == 25 and arguments[3] & _MREMAP_DONTUNMAP:  # the old range stays mapped, emptied
                ranges.append((arguments[0], _page_up(arguments[1])))
        return None if sum(size for _, size in ranges) > MOST_MAPPED else ranges


def _page_up(value):
    return (value + 4095) & ~4095


def _heap_end(pid):
    """Where the brk heap ends now (page aligned): the [heap] mapping's end, else start_brk; None if unknown."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                if line.rstrip().endswith("[heap]"):
                    return int(line.split("-")[1].split()[0], 16)
        with open(f"/proc/{pid}/stat") as stat:
            return _page_up(int(stat.read().rsplit(")", 1)[1].split()[44]))
    except (OSError, ValueError, IndexError):
        return None
