"""What a Linux x86-64 system call writes to the calling process's memory, by its number and arguments.

The recorder asks after a call, with its result (the bytes a ``read`` returned) and the memory to read back
(iovec tables, socket address lengths).  The value recovery asks with neither: it has the arguments
alone, so a buffer whose length only the result tells counts at the most the call may fill (``read``'s
``count``), and a call whose buffers are listed in memory is not told.  Either way ``None`` means the call
may write memory this table cannot bound.  Files, sockets and the kernel's own state are not memory here.
"""

import errno

SOCKADDR_MOST = 128  # sizeof(struct sockaddr_storage): the most a call copies out as an address
# madvise's advice (an int: the kernel reads rdx's low 32 bits) that leaves the contents as they are, and that
# zeroes the range at once (MADV_DONTNEED, MADV_GUARD_INSTALL and MADV_GUARD_REMOVE); any other may drop them
# later or is not known here (MADV_FREE, MADV_REMOVE, MADV_DONTNEED_LOCKED, MADV_HWPOISON...)
_MADV_KEEPS = frozenset({0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 25})
_MADV_ZEROES = frozenset({4, 102, 103})
_CLONE_VM, _CLONE_PARENT_SETTID, _CLONE_PIDFD = 0x100, 0x100000, 0x1000
_EINTR = -errno.EINTR
_X32 = 0x40000000  # __X32_SYSCALL_BIT
_IOV_MAX = 1024

# Calls known to write no user memory.
NO_WRITE = frozenset({
    1, 2, 3, 8, 10, 11, 15, 18, 20, 21, 24, 26, 32, 33, 34, 37, 39, 41, 42, 44, 46, 48, 49, 50, 54, 57, 60, 62,
    74, 75, 76, 77, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90, 91, 92, 93, 94, 95, 102, 104, 105, 106, 107, 108,
    109, 110, 111, 112, 113, 114, 116, 117, 119, 121, 124, 135, 144, 149, 150, 151, 152, 160, 162, 186, 200,
    203, 213, 218, 221, 231, 233, 234, 235, 257, 258, 260, 263, 264, 265, 266, 268, 269, 273, 276, 277, 280,
    283, 284, 285, 290, 291, 292, 294, 296, 306, 308, 316, 319, 324, 328, 434, 436, 437, 439,
})  # fmt: skip

# fcntl commands that copy a structure out to ``arg``, by size; the others listed write nothing.
_FCNTL_OUT = {5: 32, 16: 8, 36: 32, 1035: 8, 1037: 8}  # F_GETLK, F_GETOWN_EX, F_OFD_GETLK, F_GET_(FILE_)RW_HINT
_FCNTL_NONE = frozenset({0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 15, 37, 38, 1024, 1025, 1026, 1030, 1031, 1032, 1033, 1034})
_IOCTL_OUT = {0x5401: 36, 0x5413: 8, 0x541B: 4}  # TCGETS, TIOCGWINSZ, FIONREAD


def call_number(rax):
    """The system call a ``syscall`` runs with ``rax`` (None: unknown): the kernel reads its low 32 bits, so
    0x10000000f is rt_sigreturn; None for an x32 call (bit 30 set), whose numbers are another table's."""
    if rax is None or rax & _X32:
        return None
    return rax & 0xFFFFFFFF


class _UnknownArgumentError(Exception):
    """An argument the call's writes depend on is unknown (None)."""


def _known(value):
    if value is None:
        raise _UnknownArgumentError
    return value


def _at(address, size):
    """The buffer at ``address`` (0: none asked for) of ``size`` bytes."""
    return [(address, size)] if _known(address) and _known(size) > 0 else []


def _filled(address, result, most):
    """A buffer the result says how much of was filled; at the most ``most`` where the result is unknown."""
    return _at(address, most if result is None else result)


def _read_word(read, address, size):
    data = read(address, size) if read is not None and address else None
    return int.from_bytes(data, "little") if data is not None and len(data) == size else None


def _iovecs(read, address, count, total):
    """The buffers of ``count`` iovecs at ``address`` that ``total`` bytes filled (None: any), in order."""
    table = read(address, 16 * min(count, _IOV_MAX)) if read is not None else None
    if table is None or len(table) < 16 * min(count, _IOV_MAX):
        return None
    buffers = []
    for k in range(len(table) // 16):
        base, length = (int.from_bytes(table[16 * k + i : 16 * k + i + 8], "little") for i in (0, 8))
        filled = length if total is None else min(length, total)
        buffers += _at(base, filled)
        total = None if total is None else total - filled
    return buffers


def _socket_address(read, address, length_address):
    """A sockaddr the kernel filled, and its socklen_t (in/out) length."""
    if not _known(address) or not _known(length_address):
        return []
    length = _read_word(read, length_address, 4)
    return [(length_address, 4), *_at(address, SOCKADDR_MOST if length is None else min(length, SOCKADDR_MOST))]


def _option(read, address, length_address):
    """getsockopt's value and its socklen_t (in/out) length: as many bytes as that length says, with no bound of
    its own (TCP_INFO's are 280; a sockaddr's 128 was taken for it)."""
    if not _known(address) or not _known(length_address):
        return []
    length = _read_word(read, length_address, 4)
    if length is None:
        raise _UnknownArgumentError
    return [(length_address, 4), *_at(address, length)]


def _message(read, address, received):
    """recvmsg's struct msghdr: the data, the name, the control data, and the fields the kernel updates."""
    header = read(address, 56) if read is not None else None
    if header is None or len(header) < 56:
        return None
    field = lambda offset: int.from_bytes(header[offset : offset + 8], "little")  # noqa: E731
    name_length, control_length = field(8) & 0xFFFFFFFF, field(40)
    written = _iovecs(read, field(16), field(24), received)
    return (
        None
        if written is None
        else [(address, 56), *written, *_at(field(0), name_length), *_at(field(32), control_length)]
    )


def _fd_sets(a):
    return [buffer for k in (1, 2, 3) for buffer in _at(a[k], (_known(a[0]) + 63) // 64 * 8)]


def _fcntl(a):
    if _known(a[1]) in _FCNTL_OUT:
        return _at(a[2], _FCNTL_OUT[a[1]])
    return [] if a[1] in _FCNTL_NONE else None


def _madvise(a):
    advice = _known(a[2]) & 0xFFFFFFFF
    if advice in _MADV_ZEROES:
        return _at(a[0], (_known(a[1]) + 4095) & ~4095)
    return [] if advice in _MADV_KEEPS else None


# number -> (arguments, result or None, read or None) -> [(address, size)] written, or None when it cannot tell.
_WRITES = {
    0: lambda a, r, read: _filled(a[1], r, a[2]),
    4: lambda a, r, read: _at(a[1], 144),
    5: lambda a, r, read: _at(a[1], 144),
    6: lambda a, r, read: _at(a[1], 144),
    7: lambda a, r, read: _at(a[0], 8 * a[1]),
    13: lambda a, r, read: _at(a[2], 24 + a[3]),
    14: lambda a, r, read: _at(a[2], a[3]),
    16: lambda a, r, read: _at(a[2], _IOCTL_OUT[a[1]]) if _known(a[1]) in _IOCTL_OUT else None,
    17: lambda a, r, read: _filled(a[1], r, a[2]),
    19: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    22: lambda a, r, read: _at(a[0], 8),
    23: lambda a, r, read: _fd_sets(a) + _at(a[4], 16),
    28: lambda a, r, read: _madvise(a),
    35: lambda a, r, read: _at(a[1], 16) if r in (None, _EINTR) else [],
    36: lambda a, r, read: _at(a[1], 32),
    38: lambda a, r, read: _at(a[2], 32),
    43: lambda a, r, read: _socket_address(read, a[1], a[2]),
    45: lambda a, r, read: _filled(a[1], r, a[2]) + _socket_address(read, a[4], a[5]),
    47: lambda a, r, read: _message(read, a[1], r),
    51: lambda a, r, read: _socket_address(read, a[1], a[2]),
    52: lambda a, r, read: _socket_address(read, a[1], a[2]),
    53: lambda a, r, read: _at(a[3], 8),
    55: lambda a, r, read: _option(read, a[3], a[4]),
    56: lambda a, r, read: (
        None if a[0] & (_CLONE_VM | _CLONE_PIDFD) else _at(a[2], 4 * bool(a[0] & _CLONE_PARENT_SETTID))
    ),
    61: lambda a, r, read: _at(a[1], 4) + _at(a[3], 144),
    63: lambda a, r, read: _at(a[0], 390),
    72: lambda a, r, read: _fcntl(a),
    78: lambda a, r, read: _filled(a[1], r, a[2]),
    79: lambda a, r, read: _filled(a[0], r, a[1]),
    89: lambda a, r, read: _filled(a[1], r, a[2]),
    96: lambda a, r, read: _at(a[0], 16) + _at(a[1], 8),
    97: lambda a, r, read: _at(a[1], 16),
    98: lambda a, r, read: _at(a[1], 144),
    99: lambda a, r, read: _at(a[0], 112),
    100: lambda a, r, read: _at(a[0], 32),
    115: lambda a, r, read: _filled(a[1], None if r is None else 4 * r, 4 * a[0]) if _known(a[0]) else [],
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
    204: lambda a, r, read: _filled(a[2], r, a[1]),
    217: lambda a, r, read: _filled(a[1], r, a[2]),
    228: lambda a, r, read: _at(a[1], 16),
    229: lambda a, r, read: _at(a[1], 16),
    230: lambda a, r, read: _at(a[3], 16) if r in (None, _EINTR) else [],
    232: lambda a, r, read: _filled(a[1], None if r is None else 12 * r, 12 * a[2]),
    247: lambda a, r, read: _at(a[2], 128) + _at(a[4], 144),
    262: lambda a, r, read: _at(a[2], 144),
    267: lambda a, r, read: _filled(a[2], r, a[3]),
    270: lambda a, r, read: _fd_sets(a) + _at(a[4], 16),
    271: lambda a, r, read: _at(a[0], 8 * a[1]) + _at(a[2], 16),
    281: lambda a, r, read: _filled(a[1], None if r is None else 12 * r, 12 * a[2]),
    288: lambda a, r, read: _socket_address(read, a[1], a[2]),
    293: lambda a, r, read: _at(a[0], 8),
    295: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    302: lambda a, r, read: _at(a[3], 16),
    318: lambda a, r, read: _filled(a[0], r, a[1]),
    327: lambda a, r, read: _iovecs(read, a[1], a[2], r),
    332: lambda a, r, read: _at(a[4], 256),
    334: lambda a, r, read: _at(a[0], a[1]),  # rseq: the kernel fills the area in at once
}


def written(number, arguments, result=None, read=None):
    """``[(address, size)]`` the call may have written, or None where it cannot be bounded.

    ``arguments``: rdi, rsi, rdx, r10, r8, r9 before the call; ``result``: rax after it as a signed number,
    None where unknown; ``read(address, size)``: the process's memory as the call found it (bytes, short or
    None where unknown), for the calls whose buffers are listed in memory.  An argument may be None (unknown):
    where the writes depend on it, the answer is None."""
    number = call_number(number)
    if number is None:
        return None
    if number in NO_WRITE:
        return []
    if number not in _WRITES:  # mmap, brk, mremap among them: new contents, which only the recorder reads
        return None
    if result is not None and result < 0:  # a failed call may have written its buffers, or part of them: an
        result = None  # EFAULT past their mapped part, poll's revents and select's time left at EINTR
    try:
        return _WRITES[number](arguments, result, read)
    except (_UnknownArgumentError, TypeError):  # TypeError: arithmetic on an unknown argument
        return None
