"""Where a traced thread may have started another thread that shares its memory: from there on, memory is shared.

A trace that follows one thread says nothing of the threads it does not follow, and a core lists only the
threads alive when it was written.  A thread that ``pthread_create`` started after recording began and that
ended before the core (or before ``trace save``) is in neither, yet it wrote memory meanwhile: carried back
from a later load, its value would be shown at positions before it wrote it.  The traced thread's own
``clone`` or ``clone3`` system call shows where such a thread may begin.

A call's number and ``clone``'s flags are the registers before the ``syscall``: the recorder's, where it
kept them, else what the instructions just before it compute from constants alone (``mov eax, 0x1b3``), run
forwards from nothing known.  Where they do not say, the call may be one.  ``clone3`` keeps its flags in
memory, so every one counts; ``clone`` with CLONE_VFORK (vfork, posix_spawn) does not, for its parent waits
until the child has left the memory (exec or exit); ``fork`` shares nothing.

Asynchronous I/O is such a writer too: the kernel completes an io_uring's requests, or Linux AIO's, into any
buffer they name when it pleases (during an unrelated call), so ``io_uring_setup`` and ``io_setup`` count as
well (a ring set up and torn down within the trace is in no core).
"""

from dataclasses import dataclass

import numpy as np

from ..decode.cursor import runs
from ..x86.syscall_memory import call_number
from . import rules
from .effects import MemRef
from .kernel_steps import EXACT
from .registers import RAX, RBP, RDI, RSP

CLONE, CLONE3 = 56, 435
_SIGRETURN = 15
_ASYNCHRONOUS = frozenset((CLONE3, 206, 425))  # clone3 (its flags in memory), io_setup, io_uring_setup
_CLONE_VM, _CLONE_VFORK = 0x100, 0x4000
_SYSCALL = b"\x0f\x05"
_LOOK_BACK = 64  # instructions before a syscall that may set its number and flags
_MEMOS = 4096  # the steps kept at each end of a walk back through register moves, where later walks meet it
_WHOLE = ((0, 32), (0, 64))  # (shift, width) of a register written whole: a 32-bit write zero-extends


def first_creation(call_at, calls) -> int | None:
    """The first of the positions ``calls`` (each a ``syscall``'s, in order) whose call may start a thread sharing
    the memory, or None; ``call_at(position)``: the ``(number, flags)`` of the call there (number_and_flags)."""
    return next((position for position in calls if _may_create(*call_at(position))), None)


def head_windows(decoded, expander, first, read_code, effect_of) -> list[tuple[int, ...]]:
    """The instructions up to each ``syscall`` among positions 0..first-1 (a long trace's head, which the recovery
    does not cover) that may start a task sharing the memory, each distinct run of them once: first_creation
    tells on each one's last (joined with a 0 between, a gap).  A ``syscall`` ends its block, so only the blocks
    the head ran that end in one are read; one whose own instructions set a number other than clone's and
    clone3's starts nothing wherever it ran, and those that may are looked at where they ran.
    ``effect_of(address)``: an Effect."""
    windows = set()
    for part, base in zip(decoded.parts, decoded.part_starts, strict=True):
        if base >= first:
            break
        if not part.item_count:
            continue
        ordinal = part.block_at(min(first - base, part.item_count) - 1)[0] + 1
        sequence = np.asarray(part.block_sequence[:ordinal], dtype=np.int64)
        rows = np.unique(sequence).tolist()
        rows = [row for row in rows if _may_end_in_one(part, row, expander, read_code, effect_of)]
        if not rows:
            continue
        sizes = np.maximum(np.asarray(part.block_sizes, dtype=np.int64), 1)[sequence]
        ends = base + np.cumsum(sizes) - 1  # each block's last position
        for position in ends[np.isin(sequence, rows)].tolist():
            if position < first:
                windows.add(_window(decoded, expander, position))
    return sorted(windows)


def _may_end_in_one(part, row, expander, read_code, effect_of) -> bool:
    """Whether block ``row`` of ``part`` ends in a ``syscall`` its own instructions do not rule out as a creation."""
    size = part.block_sizes[row]
    if not size:  # a gap
        return False
    addresses = expander.addresses(part.block_ips[row], size)
    if read_code(addresses[-1], 2) != _SYSCALL:
        return False
    number, flags = number_and_flags(size - 1, lambda p: effect_of(addresses[p]), lambda _: False, lambda _: None)
    return _may_create(number, flags)


def _window(decoded, expander, position) -> tuple[int, ...]:
    """The addresses of positions ``position - _LOOK_BACK`` .. ``position`` (0 at a gap's)."""
    low, found = max(0, position - _LOOK_BACK), []
    for index, run in runs(decoded, low, expander):
        if index > position:
            break
        found += run[: position + 1 - index] if isinstance(run, tuple) else [0]
    return tuple(found)


def _may_create(number, flags) -> bool:
    if number is None or number in _ASYNCHRONOUS:
        return True
    return number == CLONE and (flags is None or bool(flags & _CLONE_VM and not flags & _CLONE_VFORK))


def number_and_flags(position, effect_at, cut_after, recorded_at, chains=None):
    """``(rax, rdi)`` before instruction ``position`` (a system call's number and clone's flags), each None where
    neither the recorder nor the constants just before say it.  ``effect_at(position)``: its Effect or None;
    ``cut_after(position)``: whether nothing carries from that instruction to the next; ``recorded_at(position)``:
    the registers a recorder saw there, ``{name: value}``, or None; ``chains``: what earlier calls followed back
    (``_chained``), to share between calls on one trace."""
    recorded = recorded_at(position)
    if recorded is not None and "rax" in recorded:
        return call_number(recorded["rax"]), recorded.get("rdi")
    run = _LookBack()
    for earlier in range(max(0, position - _LOOK_BACK), position):
        effect = effect_at(earlier)
        if effect is None or cut_after(earlier):
            run = _LookBack()
        else:
            run.step(effect)
    number = run.integer(RAX)
    if number is None:
        number = _chained(position, RAX, effect_at, cut_after, {} if chains is None else chains)
    if chains is not None:
        chains[("call", position)] = call_number(number)  # what a later walk back past this call needs
    return call_number(number), run.integer(RDI)


def _chained(position, register, effect_at, cut_after, chains):
    """The constant ``register`` holds before ``position``, followed back through the instructions that last
    wrote it (a number set before a loop, moved in at the call): a ``mov`` of an immediate, a zeroing ``xor``,
    or a ``mov`` of a whole other register, followed in turn.  None where anything else writes it or a cut comes
    first, or a system call that may be rt_sigreturn.  ``chains``: {(register, position): its constant there},
    what earlier walks found (a walk ends at the start of one for the same register: each syscall of a loop would
    walk back to the same ``mov`` again), and {("call", position): the number of the syscall there}."""
    started, earlier = [], position - 1
    while True:
        if (register, earlier + 1) in chains:
            found = chains[(register, earlier + 1)]
            break
        started.append((register, earlier + 1))
        effect = effect_at(earlier) if earlier >= 0 else None
        if effect is None or cut_after(earlier) or (effect.kind == "syscall" and not _kept_across(earlier, chains)):
            found = None
            break
        if register in effect.writes:
            found, register = _written_constant(effect, register)
            if register is None:
                break
        earlier -= 1
    for key in (*started[:_MEMOS], *started[-_MEMOS:]):  # where later walks meet this one: its ends
        chains[key] = found
    return found


def _kept_across(position, chains):
    """Whether the ``syscall`` at ``position`` leaves the registers it does not return in as they were: its number
    is known (found before: calls are looked at in order) and not rt_sigreturn's, which loads them all."""
    number = chains.get(("call", position))
    return number is not None and number != _SIGRETURN


def _written_constant(effect, register):
    """``(constant, None)`` that ``effect`` writes to the whole ``register`` (None: it is no constant), or
    ``(None, other)`` where it copies a whole ``other`` register into it."""
    target, source = (*effect.operands, None, None)[:2]
    if target is None or target.kind != "reg" or target.reg[0] != register or target.reg[1:] not in _WHOLE:
        return None, None
    if effect.kind == "alu" and rules.zero_idiom(effect):
        return 0, None
    if effect.kind != "mov" or source is None:
        return None, None
    if source.kind == "imm":
        return source.imm & ((1 << target.reg[2]) - 1), None
    if source.kind != "reg" or source.reg[1:] != target.reg[1:]:
        return None, None
    return None, source.reg[0]


@dataclass(frozen=True)
class _Stack:
    """The stack pointer where the look-back began, plus ``offset``: a wrapper's spilled arguments (``-O0``'s
    ``mov [rbp - 8], rdi`` ... ``mov rax, [rbp - 8]``) are read back through it."""

    offset: int


class _LookBack:
    """Instructions run forwards from nothing known: registers hold integers or _Stack offsets; ``frame`` holds
    what was stored at known stack offsets, {offset: (size, value)}, forgotten at a store that may alias it."""

    def __init__(self):
        self.known, self.frame = {RSP: _Stack(0)}, {}

    def integer(self, register):
        value = self.known.get(register)
        return value if isinstance(value, int) else None

    def step(self, effect):
        if effect.kind == "syscall":  # it may be rt_sigreturn, which loads every register from a frame
            self.known, self.frame = {RSP: _Stack(0)}, {}
            return
        before = dict(self.known)
        places = [self._place(ref, before) for _, ref, _ in effect.accesses]
        loads = {
            k: self._load(place, access[2])
            for k, (place, access) in enumerate(zip(places, effect.accesses, strict=True))
        }
        integers = {register: value for register, value in before.items() if isinstance(value, int)}
        loaded = {k: value for k, value in loads.items() if isinstance(value, int)}
        found, stores = rules.forward(effect, integers.get, loaded.get) if effect.kind in EXACT else ({}, {})
        for register in effect.writes:
            self.known[register] = found.get(register)
        self._follow_stack(effect, before, loads, stores)
        for k, (kind, _, size) in enumerate(effect.accesses):
            if kind == "w":
                self._store(places[k], size, stores.get(k))
        if effect.barrier:
            self.frame = {}

    def _follow_stack(self, effect, before, loads, stores):
        """The results that are stack offsets, which integer arithmetic did not give."""
        kind, operands, rsp = effect.kind, effect.operands, before.get(RSP)
        moved = isinstance(rsp, _Stack)
        if kind in ("push", "call") and moved:
            self.known[RSP] = _Stack(rsp.offset - 8)
            if kind == "push" and operands[0].kind == "reg" and isinstance(before.get(operands[0].reg[0]), _Stack):
                stores[len(effect.accesses) - 1] = before[operands[0].reg[0]]
        elif kind in ("pop", "ret") and moved:
            self.known[RSP] = _Stack(rsp.offset + 8 + (effect.extra if kind == "ret" else 0))
            if kind == "pop" and isinstance(loads.get(0), _Stack):
                self.known[operands[0].reg[0]] = loads[0]
        elif kind == "leave" and isinstance(before.get(RBP), _Stack):
            self.known[RSP], self.known[RBP] = _Stack(before[RBP].offset + 8), loads.get(0)
        elif kind in ("mov", "lea", "alu") and operands and operands[0].kind in ("reg", "mem"):
            value = self._stack_result(effect, before, loads)
            if value is not None and operands[0].kind == "reg":
                self.known[operands[0].reg[0]] = value
            elif value is not None and operands[0].store >= 0:
                stores[operands[0].store] = value

    def _stack_result(self, effect, before, loads):
        """A 64-bit ``mov`` of a stack offset, ``lea`` of one plus a displacement, ``add``/``sub`` of an integer
        to one: the offset it writes, or None."""
        destination, source = effect.operands[0], effect.operands[-1]
        if destination.width != 64:
            return None
        if effect.kind == "mov":
            value = before.get(source.reg[0]) if source.kind == "reg" else loads.get(source.load)
            return value if isinstance(value, _Stack) else None
        if effect.kind == "lea":
            ref = source.ref
            base = before.get(ref.base) if ref.base is not None else None
            plain = ref.index is None and ref.segment is None and type(ref) is MemRef
            return _Stack(base.offset + ref.disp) if plain and isinstance(base, _Stack) else None
        if effect.mnemonic in ("add", "sub") and destination.kind == "reg" and source.kind in ("imm", "reg"):
            base = before.get(destination.reg[0])
            amount = source.imm if source.kind == "imm" else before.get(source.reg[0])
            if isinstance(base, _Stack) and isinstance(amount, int):
                return _Stack(base.offset + (amount if effect.mnemonic == "add" else -amount))
        return None

    def _place(self, ref, before):
        """Where an access goes: ("stack", offset), ("elsewhere",) for a rip-relative or absolute address (no
        stack slot), or None where unknown."""
        if type(ref) is not MemRef or ref.segment is not None or ref.index is not None:
            return None
        if ref.base is None:
            return ("elsewhere",)
        base = before.get(ref.base)
        return ("stack", base.offset + ref.disp) if isinstance(base, _Stack) else None

    def _load(self, place, size):
        if place is None or place[0] != "stack":
            return None
        held = self.frame.get(place[1])
        if held is None or held[0] < size:
            return None
        return held[1] if held[0] == size else (held[1] & ((1 << 8 * size) - 1) if isinstance(held[1], int) else None)

    def _store(self, place, size, value):
        if place is None:  # it may be any slot
            self.frame = {}
        elif place[0] == "stack":
            low, high = place[1], place[1] + size
            self.frame = {o: held for o, held in self.frame.items() if o + held[0] <= low or o >= high}
            if value is not None:
                self.frame[low] = (size, value)
