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
untraced: ``unknownMemory``.  One file per thread (``syscalls/<tid>.json``): a list of
``{"instruction": N, "registers": {...}, "memory": [[address, "hex"], ...], "unknownMemory": bool}``, N
the thread's instructions before the ``syscall`` (its ground truth's index).  A signal delivered to a
handler is the kernel writing too: ``{"instruction": N, "signalFrame": [[address, "hex"]]}`` is the stack
it wrote, as it stands before the handler's first instruction, the N-th.
"""

import errno
import json

from ...values.machine_state import TRACKED
from . import ptrace

SYSCALL = b"\x0f\x05"
MOST_MAPPED = 1 << 20
MOST_FRAME = 1 << 16  # a signal frame with AVX-512 state is about 3.5 KiB
_RED_ZONE = 128  # bytes below rsp a signal frame leaves alone (the x86-64 ABI)
_ALWAYS = ("rax", "rcx", "r11")  # what every syscall sets: its result, the return address, the flags
_CLONE_VM, _CLONE_PARENT_SETTID, _CLONE_PIDFD = 0x100, 0x100000, 0x1000
_MADV_DONTNEED = 4
_MADV_DISCARDS = (8, 9, 24)  # MADV_FREE, MADV_REMOVE, MADV_DONTNEED_LOCKED: contents may go at any time

# Calls known to write no user memory (the process's own memory; files, sockets and the kernel aside).
_NO_WRITE = frozenset({
    1, 2, 3, 8, 10, 11, 15, 18, 20, 21, 24, 26, 32, 33, 34, 37, 39, 41, 42, 44, 46, 48, 49, 50, 54, 57, 60, 62,
    74, 75, 76, 77, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90, 91, 92, 93, 94, 95, 102, 104, 105, 106, 107, 108,
    109, 110, 111, 112, 113, 114, 116, 117, 119, 121, 124, 135, 144, 149, 150, 151, 152, 160, 162, 186, 200,
    203, 213, 218, 221, 231, 233, 234, 235, 257, 258, 260, 263, 264, 265, 266, 268, 269, 273, 276, 277, 280,
    283, 284, 285, 290, 291, 292, 294, 296, 306, 308, 316, 319, 324, 328, 434, 436, 437, 439,
})  # fmt: skip


def _at(address, size):
    return [(address, size)] if address and size > 0 else []


def _iovecs(read, address, count, total):
    """The buffers of ``count`` iovecs at ``address`` that ``total`` bytes filled, in order."""
    table = read(address, 16 * min(count, _IOV_MAX))
    buffers = []
    for k in range(len(table) // 16):
        base, length = (int.from_bytes(table[16 * k + i : 16 * k + i + 8], "little") for i in (0, 8))
        buffers += _at(base, min(length, total))
        total -= min(length, total)
    return buffers


def _socket_address(read, address, length_address):
    """A sockaddr the kernel filled, and its socklen_t (in/out) length."""
    if not address or not length_address:
        return []
    length = int.from_bytes(read(length_address, 4).ljust(4, b"\0"), "little")
    return [(length_address, 4), *_at(address, min(length, 128))]


def _message(read, address, received):
    """recvmsg's struct msghdr: the data, the name, the control data, and the fields the kernel updates."""
    header = read(address, 56).ljust(56, b"\0")
    field = lambda offset: int.from_bytes(header[offset : offset + 8], "little")  # noqa: E731
    name_length, control_length = field(8) & 0xFFFFFFFF, field(40)
    written = _iovecs(read, field(16), field(24), received)
    return [(address, 56), *written, *_at(field(0), name_length), *_at(field(32), control_length)]


def _fd_sets(a):
    return [(a[k], (a[0] + 63) // 64 * 8) for k in (1, 2, 3) if a[k]]


_EINTR = -errno.EINTR
_IOV_MAX = 1024
# number -> (arguments, result, read) -> [(address, size)] written, or None when it cannot tell.
_WRITES = {
    0: lambda a, r, read: _at(a[1], r),
    4: lambda a, r, read: _at(a[1], 144),
    5: lambda a, r, read: _at(a[1], 144),
    6: lambda a, r, read: _at(a[1], 144),
    7: lambda a, r, read: _at(a[0], 8 * a[1]),
    13: lambda a, r, read: _at(a[2], 24 + a[3]),
    14: lambda a, r, read: _at(a[2], a[3]),
    16: lambda a, r, read: {0x5401: _at(a[2], 36), 0x5413: _at(a[2], 8), 0x541B: _at(a[2], 4)}.get(a[1]),
    17: lambda a, r, read: _at(a[1], r),
    19: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    22: lambda a, r, read: _at(a[0], 8),
    23: lambda a, r, read: _fd_sets(a) + _at(a[4], 16),
    35: lambda a, r, read: _at(a[1], 16) if r == _EINTR else [],
    36: lambda a, r, read: _at(a[1], 32),
    38: lambda a, r, read: _at(a[2], 32),
    43: lambda a, r, read: _socket_address(read, a[1], a[2]),
    45: lambda a, r, read: _at(a[1], r) + _socket_address(read, a[4], a[5]),
    47: lambda a, r, read: _message(read, a[1], r),
    51: lambda a, r, read: _socket_address(read, a[1], a[2]),
    52: lambda a, r, read: _socket_address(read, a[1], a[2]),
    53: lambda a, r, read: _at(a[3], 8),
    55: lambda a, r, read: _socket_address(read, a[3], a[4]),
    56: lambda a, r, read: (
        None if a[0] & (_CLONE_VM | _CLONE_PIDFD) else _at(a[2], 4 * bool(a[0] & _CLONE_PARENT_SETTID))
    ),
    61: lambda a, r, read: _at(a[1], 4) + _at(a[3], 144),
    63: lambda a, r, read: _at(a[0], 390),
    72: lambda a, r, read: _at(a[2], 32) if a[1] in (5, 36) else [],
    78: lambda a, r, read: _at(a[1], r),
    79: lambda a, r, read: _at(a[0], r),
    89: lambda a, r, read: _at(a[1], r),
    96: lambda a, r, read: _at(a[0], 16) + _at(a[1], 8),
    97: lambda a, r, read: _at(a[1], 16),
    98: lambda a, r, read: _at(a[1], 144),
    99: lambda a, r, read: _at(a[0], 112),
    100: lambda a, r, read: _at(a[0], 32),
    115: lambda a, r, read: _at(a[1], 4 * r) if a[0] else [],
    118: lambda a, r, read: _at(a[0], 4) + _at(a[1], 4) + _at(a[2], 4),
    120: lambda a, r, read: _at(a[0], 4) + _at(a[1], 4) + _at(a[2], 4),
    127: lambda a, r, read: _at(a[0], a[1]),
    131: lambda a, r, read: _at(a[1], 24),
    137: lambda a, r, read: _at(a[1], 120),
    138: lambda a, r, read: _at(a[1], 120),
    157: lambda a, r, read: _at(a[1], 16) if a[0] == 16 else ([] if a[0] in (1, 4, 15, 0x53564D41) else None),
    158: lambda a, r, read: _at(a[1], 8) if a[0] in (0x1003, 0x1004) else ([] if a[0] in (0x1001, 0x1002) else None),
    201: lambda a, r, read: _at(a[0], 8),
    202: lambda a, r, read: [] if a[1] & 0x7F in (0, 1, 9, 10) else None,
    204: lambda a, r, read: _at(a[2], r),
    217: lambda a, r, read: _at(a[1], r),
    228: lambda a, r, read: _at(a[1], 16),
    229: lambda a, r, read: _at(a[1], 16),
    230: lambda a, r, read: _at(a[3], 16) if r == _EINTR else [],
    232: lambda a, r, read: _at(a[1], 12 * r),
    247: lambda a, r, read: _at(a[2], 128) + _at(a[4], 144),
    262: lambda a, r, read: _at(a[2], 144),
    267: lambda a, r, read: _at(a[2], r),
    270: lambda a, r, read: _fd_sets(a) + _at(a[4], 16),
    271: lambda a, r, read: _at(a[0], 8 * a[1]) + _at(a[2], 16),
    281: lambda a, r, read: _at(a[1], 12 * r),
    288: lambda a, r, read: _socket_address(read, a[1], a[2]),
    293: lambda a, r, read: _at(a[0], 8),
    295: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    302: lambda a, r, read: _at(a[3], 16),
    318: lambda a, r, read: _at(a[0], r),
    327: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    332: lambda a, r, read: _at(a[4], 256),
    334: lambda a, r, read: _at(a[0], a[1]),  # rseq: the kernel fills the area in at once
}
_MAPPING = {9, 12, 25, 28}  # mmap, brk, mremap, madvise: see SyscallLog._mapped
_FAILED_WRITES = {35, 230}  # calls that write even when they fail (the time left, at EINTR)


class SyscallLog:
    """Every recorded thread's syscall results, gathered as the threads step over ``syscall``."""

    def __init__(self, pid, memory):
        self.memory = memory
        self.entries = {}  # tid -> (instruction index, registers) of a thread standing at a syscall
        self.results = {}  # tid -> [result]
        self._heap_end = _heap_end(pid)  # where the brk heap's pages end

    def entering(self, tid, index, address):
        """Thread ``tid`` stands at a far transfer at ``address``, its ``index``-th instruction: note a syscall."""
        if self.memory.read(address, 2) == SYSCALL:
            self.entries[tid] = (index, ptrace.get_regs(tid))

    def returned(self, tid, entry):
        """Thread ``tid`` stepped over the syscall of ``entry`` (what ``entering`` noted)."""
        index, before = entry
        after = ptrace.get_regs(tid)
        registers = {}
        for name in TRACKED:
            source = ptrace.PTRACE_NAMES.get(name, name)
            if name in _ALWAYS or after[source] != before[source]:
                registers[name] = after[source]
        written = self._written(before, after)
        memory = [] if written is None else [[address, data.hex()] for address, data in written]
        result = {"instruction": index, "registers": registers, "memory": memory, "unknownMemory": written is None}
        self.results.setdefault(tid, []).append(result)

    def signal_frame(self, tid, index, interrupted_rsp):
        """Thread ``tid`` stands at the first instruction of a signal handler, its ``index``-th: keep the stack the
        kernel wrote below the interrupted rsp and its red zone (the return trampoline's address, ucontext,
        siginfo, the saved vector state), as known before that instruction.  A handler on an alternate stack
        (sigaltstack) is elsewhere: not kept."""
        rsp = ptrace.get_regs(tid)["rsp"]
        top = interrupted_rsp - _RED_ZONE
        if not 0 < top - rsp <= MOST_FRAME:
            return
        data = self.memory.read(rsp, top - rsp)
        if len(data) == top - rsp:
            self.results.setdefault(tid, []).append({"instruction": index, "signalFrame": [[rsp, data.hex()]]})

    def files(self, tids):
        """``{tid: JSON text}`` of the threads among ``tids`` that made a syscall."""
        return {tid: json.dumps(self.results[tid]) + "\n" for tid in tids if tid in self.results}

    def _written(self, before, after):
        """``[(address, bytes)]`` the kernel wrote, or None when it may have written more."""
        number = before["rax"]
        arguments = tuple(before[n] for n in ("rdi", "rsi", "rdx", "r10", "r8", "r9"))
        result = after["rax"] - (1 << 64) if after["rax"] >> 63 else after["rax"]
        if number in _MAPPING:
            ranges = self._mapped(number, arguments, result)
        elif number in _NO_WRITE:
            return []
        elif number not in _WRITES:
            return None
        elif result < 0 and number not in _FAILED_WRITES:
            return []
        else:
            ranges = _WRITES[number](arguments, result, self.memory.read)
        if ranges is None:
            return None
        written = []
        for address, size in ranges:
            data = self.memory.read(address, size)
            if len(data) < size:
                return None  # a buffer that cannot be read back: what the kernel wrote there is unknown
            written.append((address, data))
        return written

    def _mapped(self, number, arguments, result):
        """The new contents of mapped memory after mmap, brk, mremap or madvise (see the module docstring)."""
        if number == 12:
            previous, self._heap_end = self._heap_end, _page_up(result)
            if previous is None:
                return None
            ranges = [(previous, self._heap_end - previous)] if self._heap_end > previous else []
        elif result < 0:
            return []
        elif number == 28:
            if arguments[2] in _MADV_DISCARDS:
                return None
            ranges = [(arguments[0], _page_up(arguments[1]))] if arguments[2] == _MADV_DONTNEED else []
        else:
            ranges = [(result, _page_up(arguments[1] if number == 9 else arguments[2]))]
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
