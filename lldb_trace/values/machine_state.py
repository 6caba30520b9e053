"""One moment of a thread: its registers and the memory it could read, as the recovery starts from.

A core file at the trace's end and the state a recorder saved where recording
started are both a MachineState, so the recovery does not care where a known
state came from.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

# The general-purpose registers and the rest of struct user_regs_struct that the recovery tracks, by the names
# LLDB's x86-64 register set uses for them.
GENERAL = (
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
)  # fmt: skip
TRACKED = (*GENERAL, "rflags", "fs_base", "gs_base")


def _no_memory(_address: int, _size: int) -> bytes:
    return b""


@dataclass
class MachineState:
    """``registers``: TRACKED names to unsigned 64-bit values (absent: unknown); ``read_memory(address, size)``:
    the bytes known from ``address`` on, shorter than ``size`` (or empty) where what follows is not known."""

    registers: dict[str, int]
    read_memory: Callable[[int, int], bytes] = field(default=_no_memory)
    xcr0: int | None = None  # the state components the OS enabled (how far an xsave reaches); None: not known
