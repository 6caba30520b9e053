"""What a system call may write, from its arguments: the recorder asks with the result, the value recovery
without it and with unknown arguments (None), where a call it cannot bound must come out as None."""

import subprocess
import sys

import pytest
from support.paths import SOURCES

from lldb_trace import api
from lldb_trace.x86.syscall_memory import call_number, written

BUFFER, NULL = 0x7FFF0000, 0


@pytest.mark.parametrize(
    ("number", "arguments", "result", "expected"),
    [
        (1, (1, BUFFER, 5), None, []),  # write: reads the buffer, writes none
        (39, (), None, []),  # getpid
        (0, (3, BUFFER, 4096), 17, [(BUFFER, 17)]),  # read, as the recorder sees it
        (0, (3, BUFFER, 4096), None, [(BUFFER, 4096)]),  # read, the result unknown: all it may fill
        (0, (3, BUFFER, 4096), -14, [(BUFFER, 4096)]),  # a failed read may have written part of it first (EFAULT)
        (7, (BUFFER, 1, 3000), -4, [(BUFFER, 8)]),  # poll writes revents when a signal interrupts it too
        (23, (0, NULL, NULL, NULL, BUFFER), -4, [(BUFFER, 16)]),  # and select the time left
        (14, (0, BUFFER, NULL, 8), None, []),  # rt_sigprocmask without an old set
        (14, (0, NULL, BUFFER, 8), None, [(BUFFER, 8)]),
        (35, (BUFFER, BUFFER + 16), 0, []),  # nanosleep writes the time left only when interrupted
        (35, (BUFFER, BUFFER + 16), None, [(BUFFER + 16, 16)]),
        (72, (3, 16, BUFFER), 0, [(BUFFER, 8)]),  # fcntl(F_GETOWN_EX) copies a struct f_owner_ex out
        (72, (3, 1, 0), 0, []),  # F_GETFD
        (16, (1, 0x5401, BUFFER), None, [(BUFFER, 36)]),  # ioctl(TCGETS)
        (23, (64, BUFFER, NULL, NULL, NULL), None, [(BUFFER, 8)]),  # select, one fd_set
        (202, (BUFFER, 0x81, 1), None, []),  # futex(FUTEX_WAKE_PRIVATE)
        (28, (BUFFER, 100, 4), 0, [(BUFFER, 4096)]),  # madvise(MADV_DONTNEED) zeroes whole pages
        (28, (BUFFER, 4096, 0x100000004), 0, [(BUFFER, 4096)]),  # the advice is an int: this is MADV_DONTNEED
        (28, (BUFFER, 4096, 102), 0, [(BUFFER, 4096)]),  # MADV_GUARD_INSTALL drops the contents too
        (28, (BUFFER, 4096, 103), 0, [(BUFFER, 4096)]),  # and so does MADV_GUARD_REMOVE
        (28, (BUFFER, 4096, 3), 0, []),  # MADV_WILLNEED keeps them
    ],
)
def test_the_buffers_a_call_writes(number, arguments, result, expected):
    assert written(number, (*arguments, *[0] * (6 - len(arguments))), result) == expected


@pytest.mark.parametrize(
    ("number", "arguments"),
    [
        (0, (3, None, 4096)),  # read into an unknown buffer
        (0, (3, BUFFER, None)),  # of an unknown size
        (14, (0, BUFFER, None, 8)),  # an old set whose address is unknown, NULL or not
        (23, (64, None, NULL, NULL, NULL)),  # select with an unknown fd_set
        (28, (BUFFER, 4096, None)),  # madvise whose advice is unknown
        (28, (BUFFER, 4096, 8)),  # MADV_FREE: the contents may go at any time
        (28, (BUFFER, 4096, 0x7777)),  # an advice this table does not know
        (72, (3, None, BUFFER)),  # fcntl of an unknown command
        (115, (None, BUFFER)),  # getgroups of an unknown size (0 asks for nothing)
        (202, (BUFFER, None, 1)),  # futex of an unknown operation
        (19, (3, BUFFER, 2)),  # readv: its buffers are listed in memory not given here
        (59, (BUFFER, BUFFER, BUFFER)),  # execve: anything
        (9, (0, 4096, 3, 0x22, -1, 0)),  # mmap: new contents
    ],
)
def test_what_the_arguments_cannot_bound_is_none(number, arguments):
    assert written(number, (*arguments, *[0] * (6 - len(arguments)))) is None


def test_iovecs_are_read_from_memory_when_it_is_known():
    table = BUFFER.to_bytes(8, "little") + (100).to_bytes(8, "little")
    table += (BUFFER + 0x1000).to_bytes(8, "little") + (50).to_bytes(8, "little")
    memory = {0x6000: table}
    read = lambda address, size: memory.get(address, b"")[:size]  # noqa: E731
    assert written(19, (3, 0x6000, 2, 0, 0, 0), 120, read) == [(BUFFER, 100), (BUFFER + 0x1000, 20)]
    assert written(19, (3, 0x6000, 2, 0, 0, 0), None, read) == [(BUFFER, 100), (BUFFER + 0x1000, 50)]


def test_getsockopt_writes_as_many_bytes_as_its_length_says():
    """TCP_INFO fills 280 bytes: a sockaddr's bound of 128 left the rest shown as it was before the call."""
    read = lambda address, size: {0x6000: (280).to_bytes(4, "little")}.get(address, b"")[:size]  # noqa: E731
    assert written(55, (3, 6, 11, BUFFER, 0x6000, 0), 0, read) == [(0x6000, 4), (BUFFER, 280)]
    assert written(55, (3, 6, 11, BUFFER, 0x6000, 0), 0) is None  # its length not known


def test_a_call_that_fails_after_writing_part_of_its_buffer(tmp_path):
    """failed_call.c's uname fills the mapped part of its buffer, then fails with EFAULT: after it, none of the
    bytes it wrote is shown as the 0xAA it overwrote, with every known state the recorder keeps (63 were)."""
    binary = tmp_path / "failed_call"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "failed_call.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "rec"), "--", str(binary)]
    subprocess.run(command, capture_output=True, timeout=300, check=True)
    (thread,) = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    (call,) = [item.index for item in thread.items() if item.disassembly.startswith("syscall")][-2:-1]
    edge = thread.registers_at(call)["rdi"]
    data, mask = thread.read_memory_at(call + 1, edge, 64)
    assert mask[0] == 0xFF and data[0] == ord("L")  # the load after it read it
    assert not any(known and byte == 0xAA for byte, known in zip(data, mask, strict=True))


def test_the_kernel_reads_a_call_numbers_low_32_bits():
    """0x10000000f is rt_sigreturn and 0x100000004 madvise's... to the kernel; bit 30 makes an x32 call."""
    assert call_number(0x10000000F) == 15 and call_number(None) is None
    assert call_number(0x40000000 | 15) is None  # x32's table, not this one
    assert written(0x100000000, (3, BUFFER, 4096, 0, 0, 0)) == [(BUFFER, 4096)]  # read


def test_the_recorder_reads_back_the_range_mremap_leaves_empty():
    """mremap with MREMAP_DONTUNMAP moves the pages and leaves the old range mapped and empty: the recorder read
    back the new range only, and the old bytes were carried past the call."""
    from lldb_trace.capture.ptrace_recorder.syscall_results import SyscallLog

    log = SyscallLog.__new__(SyscallLog)  # its memory and heap are not needed for mremap
    old, new = 0x7FFFF7FBF000, 0x7FFFF7FB0000
    assert log._mapped(25, (old, 4096, 4096, 1 | 4, 0, 0), new) == [(new, 4096), (old, 4096)]
    assert log._mapped(25, (old, 4096, 8192, 1, 0, 0), new) == [(new, 8192)]
