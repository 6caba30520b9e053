"""What a traced thread shows LLDB at its position: the registers and memory known there.

At the end of a trace whose process has a core file, the thread shows the
core: every register of it, all its memory, and LLDB unwinds the frames from
them as it unwinds a core (``unwinds``).  Anywhere else the thread shows what
the recovery (lldb_trace.values) proves at its position.  Its frames are
LLDB's own unwinding too where the recovery knows the registers that frame 0
unwinds from and the stack holds every return address of the trace's frames,
in order (LLDB then finds the same frames, and gives each the frame base its
variables need); elsewhere they are the trace's calls, frames without
registers (LLDB can show no variable of those).  Without a recovery (a thread
with no decoded instructions) only the pc is known.  The modules' code and
read-only data are known everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..values.process_values import values_of

if TYPE_CHECKING:
    from ..values.recovery import ThreadValues


@dataclass
class ShownState:
    """``registers``: name -> value of the known ones; ``fpregs``: a core's FXSAVE area; ``unwinds``: LLDB
    finds the frames from these registers and memory (a core's state), not from the trace's calls; ``xstate``: a
    core's XSAVE area (the AVX and AVX-512 registers)."""

    registers: dict
    fpregs: bytes | None = None
    unwinds: bool = False
    values: ThreadValues | None = field(default=None, repr=False)
    position: int | None = None
    core: object = field(default=None, repr=False)
    xstate: bytes | None = field(default=None, repr=False)
    # the modules' code and read-only data, less the pages a core shows the program changed (ProcessValues.read_code)
    unchanging: Callable[[int, int], bytes] | None = field(default=None, repr=False)

    def read_memory(self, address, size):
        """The bytes known from ``address`` on (fewer than ``size`` where one is not known; b"" for none)."""
        fixed = self.unchanging(address, size) if self.unchanging is not None else b""
        if fixed:
            return fixed
        if self.core is not None:
            return self.core.read(address, size)
        if self.values is None or self.position is None:
            return b""
        data, mask = self.values.memory_at(self.position, address, size)
        known = mask.find(b"\x00")
        return data if known < 0 else data[:known]


def unmapped(state, address):
    """Whether ``state`` is a core's (the thread stands where it was taken) and the core maps nothing at ``address``:
    at the crash a wild pointer's target is not mapped, not merely not known."""
    return (
        state is not None
        and state.core is not None
        and not any(low <= address < high for low, high in state.core.mapped)
    )


def unmapped_in(target, address):
    """``unmapped`` for the selected thread of ``target``, a loaded trace's (False for any other target)."""
    return unmapped(_selected_state(target), address)


def _selected_state(target):
    """The ShownState of a loaded trace's selected thread, or None for any other target."""
    process = target.GetProcess().GetScriptedImplementation()
    if process is None or not hasattr(process, "selected_thread_state"):
        return None
    return process.selected_thread_state()


def shown_state(trace, tid, history, pc, unwinding=True):
    """The ShownState of thread ``tid`` of ProcessTrace ``trace`` standing at ``history``'s position (None:
    not decoded yet, at the end) with pc ``pc``; ``unwinding``: say whether LLDB's unwinding finds the trace's
    frames (a look through the stack that a client unwinding by itself, over gdb-remote, does not need)."""
    values = values_of(trace)
    core, unchanging = values.end_core, values.read_code()
    at_end = history is None or history.at_end
    if at_end and core is not None and core.thread(tid) is not None:  # the core is the state where the trace ends
        thread = core.thread(tid)
        registers = dict(thread.registers, rflags=core.state(tid).registers.get("rflags"))
        return ShownState(registers, thread.fpregs, True, core=core, xstate=thread.xstate, unchanging=unchanging)
    recovery = values.thread(tid) if history is not None or not at_end else None
    if recovery is None:
        return ShownState({"rip": pc}, unchanging=unchanging)
    position = history.position if history is not None else trace.decoded(tid).item_count
    registers = {name: value for name, value in recovery.registers_at(position).items() if value is not None}
    registers["rip"] = pc
    state = ShownState(registers, values=recovery, position=position, unchanging=unchanging)
    if unwinding and history is not None and _unwindable(state, history):
        state.unwinds = True
    return state


_UNWIND_REGISTERS = ("rsp", "rbp")
_STACK_WORDS = 4096  # how far above the stack pointer return addresses are looked for (32 KiB)


def _unwindable(state, history):
    """Whether LLDB's unwinding from ``state`` finds the trace's frames: frame 0's stack and frame pointers are
    known, and the known stack above the stack pointer holds each outer frame's return address, in order."""
    if not all(name in state.registers for name in _UNWIND_REGISTERS):
        return False
    frames = history.frames()
    expected = [frame.resumes_at for frame in frames[1:]]
    if None in expected or any(frame.asynchronous for frame in frames):
        return False  # a gap lost a call, or a signal frame: the trace's frames say more
    address = state.registers["rsp"]
    for _ in range(_STACK_WORDS):
        if not expected:
            return True
        data, mask = state.values.memory_at(state.position, address, 8)
        if mask == b"\xff" * 8 and int.from_bytes(data, "little") == expected[0]:
            expected.pop(0)
        address += 8
    return not expected


def known_memory(target, address, size):
    """The bytes from ``address`` on that a loaded trace's process knows at its selected thread's position."""
    state = _selected_state(target)
    return state.read_memory(address, size) if state is not None else b""
