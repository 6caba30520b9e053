"""Registers and memory of one thread at every position of its history, from the known states and the trace.

``ThreadValues`` cuts the history into windows of CHUNK positions and solves
each on demand (chunk.py), newest first from the end state, oldest first
from the start state: a question about position p costs the windows between
p and the known state, each solved once and kept.  A window's edge (its
registers and a view of its memory) pins its neighbour.  With both states,
a window is solved from its right neighbour's final values and its left
neighbour's forward-only values.  From the end state, what a window learns
about its last state that its right neighbour did not know (a value computed
forwards) is added to that neighbour, which goes on solving from where it was
(``Chunk.add_pin``), and so on rightwards while something new comes of it.

Successors: position p+1 must be where instruction p can go (its
fall-through, its direct target, anywhere for an indirect branch, the next
instruction after a syscall); otherwise a signal, the kernel or a gap came
between them and nothing carries across (a cut).  A signal that arrives just
after an indirect branch, or untraced code a ``call *`` ran, looks like the
branch; an Intel PT trace tells it apart (``interrupted``: tracing stopped
where the thread stood or went, FUP and TIP.PGD, and resumed elsewhere), and
without that mark it is a cut where the code the branch seems to enter
returns to an rt_sigreturn trampoline.  Which cuts are signal deliveries that carry what the kernel
leaves: deliveries.py.
"""

import gc
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import capstone
import numpy as np

from .. import progress
from ..errors import LldbTraceError
from ..x86.instructions import MAX_INSN_SIZE, Classifier, Transfer
from .accesses import window_accesses
from .chunk import Chunk
from .deliveries import Deliveries
from .emulator import Emulator
from .machine_state import TRACKED
from .memory_layout import spans_reader
from .paged_memory import PagedMemory
from .register_states import RecordedStates
from .registers import GPRS, INDEX, REGISTERS, RESUME_FLAG, RFLAGS, RIP, TRAP_FLAG
from .rules import relations
from .semantics import decode
from .shared_mappings import disjoint, registered_rseq_areas
from .structure import Structure
from .thread_creation import first_creation, number_and_flags
from .window_flow import WindowFlow

CHUNK = 4096
_SYSCALL = b"\x0f\x05"


class StatesDisagreeError(LldbTraceError):
    """The known states contradict the trace: values derived from them are not shown (ThreadValues._solved)."""


@dataclass
class SyscallResult:
    """What a system call left: registers after it (by name), the memory it wrote, and whether it may have
    written other memory too."""

    registers: dict
    memory: list = field(default_factory=list)  # [(address, bytes)]
    unknown_memory: bool = False
    before: bool = False  # no system call: memory the kernel wrote before this position (a signal frame)


@dataclass(frozen=True)
class Access:
    """One instruction's access to memory; ``exact`` False: it MAY have touched the range: its address is unknown
    (None), or only the area it may reach is known (a masked store's, a string instruction's of unknown direction)."""

    position: int
    kind: str  # "read" | "write"
    address: int | None
    size: int
    old: bytes | None
    new: bytes | None
    exact: bool


class ThreadValues:
    """See the module doc; positions and states as in the issue: state p is before instruction p runs."""

    def __init__(
        self,
        addresses,
        read_code,
        end=None,
        end_after_last=False,
        start=None,
        syscalls=(),
        shared_memory=False,
        recorded=None,
        interrupted=None,
        volatile=(),
    ):
        self.addresses = [int(a) for a in addresses]
        self.count = len(self.addresses)
        self._read_code = read_code
        self.end, self.end_after_last, self.start = end, end_after_last, start
        self.syscalls = dict(syscalls or {})
        self.shared = shared_memory
        self._first_shared = None  # the first window after a thread this one started (None: not looked for)
        self._given_volatile, self._volatile = disjoint(volatile), None  # shared mappings, rseq areas
        self._syscalls_at = None  # the positions of syscall instructions, found on first use
        # position -> where the thread went, where the trace shows tracing stopped after that position and resumed
        # elsewhere (a signal's delivery, code run untraced): process_values.interruptions
        self.interrupted = dict(interrupted or {})
        self._recorded = RecordedStates(*recorded) if recorded is not None else None
        self._cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._cs.detail = True
        self._effects, self._flow = {}, Classifier(read_code)
        self._signals, self._return_sites, self._calls, self._chains = Deliveries(self), {}, {}, {}
        self._emulator = Emulator()
        self._constant = PagedMemory(read_code)  # code and constants: the same at every position
        self._final, self._forward, self._structures = {}, {}, {}
        self._window_flow = None  # made on first use: the positions' addresses as an array
        self.chunks = max(1, -(-self.count // CHUNK))

    # -- questions ----------------------------------------------------------------------------------------------

    @property
    def conflicts(self):
        """Disagreements met so far in the windows solved (0 unless an assumption failed)."""
        return sum(chunk.conflicts for chunk in (*self._final.values(), *self._forward.values()))

    def registers_at(self, position):
        """TRACKED names -> value or None at ``position`` (0..count; count: after the last instruction)."""
        seen = self._recorded.at(position) if self._recorded is not None else None
        if seen is not None:  # the recorder saw them: nothing to solve
            values = dict.fromkeys(TRACKED) | seen
        else:
            chunk, state = self._locate(position)
            values = {name: chunk.register(INDEX[name], state) for name in TRACKED}
        values["rip"] = self._rip(position)
        return values

    def memory_at(self, position, address, size):
        """``(data, mask)``: the bytes at ``position`` (0 where unknown) and 0xff for each byte known."""
        chunk, state = self._locate(position)
        values = [chunk.memory_byte(state, address + offset) for offset in range(size)]
        return bytes(v or 0 for v in values), bytes(0 if v is None else 0xFF for v in values)

    def accesses(self, address, size, kinds=("write",)):
        """The instructions (and the kernel's writes) that read or wrote any byte of ``[address, address + size)``,
        newest first (accesses.py)."""
        return window_accesses(self, address, size, kinds)

    def _rip(self, position):
        if position < self.count:
            return self.addresses[position] or None
        if self.end_after_last and self.end is not None:
            return self.end.registers.get("rip")
        return None

    def _locate(self, position):
        if not 0 <= position <= self.count:
            raise IndexError(f"position {position} is outside the trace (0..{self.count})")
        number = min(position // CHUNK, self.chunks - 1)
        return self._solved(number), position - number * CHUNK

    # -- windows ------------------------------------------------------------------------------------------------

    def _solved(self, number):
        """Window ``number`` solved, with those between it and a known state; StatesDisagreeError once any met a
        conflict: two derivations of one value that differ say a known state is not of the trace's moment (a core
        of a later pass through the same pc) or run, and every value it taught may be wrong, not only those two."""
        found = self._forward_chunk(number) if self.end is None else self._from_the_end(number)
        conflicts = self.conflicts
        if conflicts:
            raise StatesDisagreeError(
                f"the known states and the trace disagree ({conflicts} value(s) derived two ways differ): a core of "
                "another moment or run than the trace's end (the same pc, a later pass of a loop?); no value is "
                "shown, as any may be wrong: load the trace with the core taken where it ends, or without one"
            )
        return found

    def _from_the_end(self, number):
        missing = [k for k in reversed(range(number, self.chunks)) if k not in self._final]
        with _windows_task(len(missing)) as task:
            for done, k in enumerate(missing):  # newest first: each needs its right neighbour
                task.at(done)  # Ctrl-C stops between windows: those solved are kept, complete
                # the registers a recorder saw make the forward pass from the start state needless
                forward = self.start is not None and k > 0 and self._recorded is None
                left = self._forward_chunk(k - 1) if forward else None
                right = self._final.get(k + 1)
                self._final[k] = self._chunk(k, left, right, with_end=True)
                while self._signals.prove(k * CHUNK, self._final[k]):  # a handler's frame says it was a signal
                    self._structures.pop(k)
                    self._final[k] = self._chunk(k, left, right, with_end=True)
                self._carry_forward(k)
        return self._final[number]

    def _carry_forward(self, k):
        """What window k learned about its last state that its right neighbour did not know about its first: the
        neighbour is solved again with it, and so on rightwards while that teaches something new."""
        while k + 1 in self._final:
            chunk, right = self._final[k], self._final[k + 1]
            if not (_edge_registers(chunk, chunk.n).keys() - _edge_registers(right, 0).keys()) & set(GPRS):
                return
            right.add_pin((0, _edge_registers(chunk, chunk.n), lambda byte, c=chunk: c.memory_byte(c.n, byte)))
            k += 1

    def _forward_chunk(self, number):
        missing = [k for k in range(number + 1) if k not in self._forward]
        with _windows_task(len(missing)) as task:
            for done, k in enumerate(missing):
                task.at(done)
                left = self._forward.get(k - 1)
                self._forward[k] = self._chunk(k, left, None, with_end=False)
        return self._forward[number]

    def _structure(self, number):
        """Window ``number``'s Structure, made once (a window may be solved again with more pins), with the slots
        the window before left live at its end."""
        found = self._own_structure(number)
        if not found.linked and number > 0:  # the registers a callee saved before the window began
            found.link(self._own_structure(number - 1).outgoing)
        return found

    def _own_structure(self, number):
        found = self._structures.get(number)
        if found is None:
            low, high = number * CHUNK, min(self.count, (number + 1) * CHUNK)
            if self._window_flow is None:
                self._window_flow = WindowFlow(self)
            effects, nexts, cuts = self._window_flow.window(low, high)
            deliveries = self._signals.mark(low, effects, cuts)
            found = Structure(effects, nexts, cuts, self._shared(number), deliveries)
            self._structures[number] = found
        return found

    def _chunk(self, number, left, right, with_end):
        low, high = number * CHUNK, min(self.count, (number + 1) * CHUNK)
        pins = []
        if left is not None:
            pins.append((0, _edge_registers(left, left.n), lambda byte, c=left: c.memory_byte(c.n, byte)))
        elif number == 0 and self.start is not None:
            pins.append((0, _named(self.start.registers), PagedMemory(self.start.read_memory, single=True)))
        if right is not None:
            pins.append((high - low, _edge_registers(right, 0), lambda byte, c=right: c.memory_byte(0, byte)))
        elif with_end and high == self.count:
            state = high - low if self.end_after_last else high - low - 1
            registers = _named(self.end.registers)
            if state and self._structure(number).active[state - 1] and RFLAGS in registers:
                # the instruction before it completed (no cut), which clears RF: a fault's core has it set
                registers[RFLAGS] &= ~RESUME_FLAG
            pins.append((state, registers, PagedMemory(self.end.read_memory, single=True)))
        syscalls = {}
        for position, result in self.syscalls.items():
            if low <= position < high and result.before:
                pins.append((position - low, {}, spans_reader(result.memory)))
            elif low <= position < high:
                registers = _named(result.registers)
                syscalls[position - low] = (registers, list(result.memory), result.unknown_memory)
        structure = self._structure(number)
        recorded = self._recorded.between(low, high) if self._recorded is not None else None
        xcr0 = next((s.xcr0 for s in (self.end, self.start) if s is not None and s.xcr0 is not None), None)
        shared = self._shared(number)
        return Chunk(structure, pins, shared, syscalls, self._emulator, self._constant, xcr0, recorded, self.volatile)

    def _shared(self, number):
        """Whether window ``number``'s memory may change behind this thread: ``shared_memory``, or this thread may
        have started one that shares it at or before the window (thread_creation.py)."""
        if self._first_shared is None:
            position = self.first_creation()
            self._first_shared = self.chunks if position is None else position // CHUNK
        return self.shared or number >= self._first_shared

    def first_creation(self, at=None):
        """The first position whose ``syscall`` may start a task sharing this thread's memory (of the syscall
        positions ``at``, or any), or None."""
        return first_creation(self.syscall_call, self._syscall_positions() if at is None else at)

    @property
    def volatile(self):
        """[(low, high)]: memory another process or the kernel may write between any two instructions: the shared
        mappings and rseq areas given, and each rseq area this thread registers in the trace (shared_mappings)."""
        if self._volatile is None:
            calls = [self.syscall_call(position) for position in self._syscall_positions()]
            self._volatile = disjoint([*self._given_volatile, *registered_rseq_areas(calls)])
        return self._volatile

    def _syscall_positions(self):
        if self._syscalls_at is None:
            calls = [address for address in set(self.addresses) if address and self._read_code(address, 2) == _SYSCALL]
            found = np.isin(np.asarray(self.addresses, dtype=np.uint64), np.asarray(calls, dtype=np.uint64))
            self._syscalls_at = np.flatnonzero(found).tolist()
        return self._syscalls_at

    def syscall_call(self, position):
        """``(number, flags)``: rax and rdi before the ``syscall`` at ``position``, each None where neither the
        recorder nor the constants just before it say (thread_creation.number_and_flags)."""
        found = self._calls.get(position)
        if found is None:
            for earlier in self._syscall_positions():  # in order: a walk back from one passes the calls before it
                if earlier >= position:
                    break
                if earlier not in self._calls:
                    self._calls[earlier] = self._number_and_flags(earlier)
            found = self._calls[position] = self._number_and_flags(position)
        return found

    def _number_and_flags(self, position):
        return number_and_flags(
            position,
            lambda p: self._effect(self.addresses[p]) if self.addresses[p] else None,
            lambda p: self._cut(p, self._effect(self.addresses[p]), self.addresses[p + 1] or None, inferred=False),
            lambda p: self._recorded.at(p) if self._recorded is not None else None,
            self._chains,
        )

    def _effect(self, address):
        effect = self._effects.get(address, False)
        if effect is False:
            code = self._read_code(address, MAX_INSN_SIZE) or b""
            effect = self._effects[address] = decode(address, code, self._cs) if code else None
            if effect is not None:
                effect.related = tuple(relations(effect))
        return effect

    def _return_site(self, address):
        """Whether a call instruction ends at ``address`` (decoded backwards, so bytes that merely look like one
        count too): where a ret usually goes.  One that goes elsewhere (swapcontext's, a retpoline's) may be a
        signal delivered just after it (Deliveries.entered)."""
        found = self._return_sites.get(address)
        if found is None:
            code = self._read_code(address - MAX_INSN_SIZE, MAX_INSN_SIZE) or b""
            found = self._return_sites[address] = any(
                call.size == length and call.mnemonic == "call"
                for length in range(2, len(code) + 1)
                for call in self._cs.disasm(code[-length:], address - length, 1)
            )
        return found

    def _cut(self, position, effect, following, inferred=True):
        """Whether nothing carries from state ``position`` to the next; without ``inferred``, an indirect branch
        is taken for what it looks like (Deliveries.entered asks so while it scans: asking again from there
        would scan again from each such branch, without end on a long startup)."""
        if effect is None or position in self.interrupted:
            return True
        if following is None:  # the last instruction: it ran only if the end state is after it
            return position + 1 < self.count or not self.end_after_last
        flow = self._flow[effect.address]
        fall = effect.address + effect.size
        if flow.transfer == Transfer.OTHER:
            return following != fall
        if flow.transfer == Transfer.DIRECT:
            return following != flow.target
        if flow.transfer == Transfer.CONDITIONAL:
            return following not in (fall, flow.target)
        if flow.transfer == Transfer.INDIRECT:  # or a signal delivered just after it, which the handler's ret tells
            if not inferred:
                return False
            if effect.kind == "ret":
                return not self._return_site(following) and self._signals.entered(position)
            return self._signals.returned_after(position) and self._signals.entered(position)
        return not (effect.kind == "syscall" and following == fall)


@contextmanager
def _windows_task(count):
    """The progress of solving ``count`` windows (lldb_trace.progress: shown in LLDB, stopped by Ctrl-C), with
    Python's cyclic collector paused meanwhile: each of its full passes walks every object the windows solved so
    far keep (a fifth of the time of a million instructions), and solving makes few cycles (a window solved again
    leaves one, collected once the collector is back)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with (
            nullcontext(progress.QUIET)
            if count < 2
            else progress.task(f"Recovering the values of {count * CHUNK:,} instructions", count) as task
        ):
            yield task
    finally:
        if was_enabled:
            gc.enable()


def _named(registers):
    """A known state's registers by number (rflags without a single-stepping recorder's TF: registers.TRAP_FLAG)."""
    named = {INDEX[name]: value for name, value in registers.items() if name in INDEX and INDEX[name] != RIP}
    if named.get(RFLAGS) is not None:
        named[RFLAGS] &= ~TRAP_FLAG
    return named


def _edge_registers(chunk, state):
    return {number: value for number in range(REGISTERS) if (value := chunk.register(number, state)) is not None}
