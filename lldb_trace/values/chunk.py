"""The values of one window of a thread's history, solved to a fixed point from the known states at its edges.

A register's value is one unknown per *segment* (structure.py).  A memory
byte keeps its value between two writes to it: a *generation*.  A
write whose address is unknown, an instruction that may write anything
(a syscall without recorded results, an opaque instruction), a gap or an
asynchronous transfer (*cut*: the next address is no successor of the
instruction: a signal, the kernel) ends every generation: a *barrier*.
With ``shared`` memory (other threads run) every instruction is a barrier:
nothing says a byte is still what it was one instruction earlier.

Facts come from *pins* (a known state at one position: the end, the start,
or a neighbouring window's edge), from the code and read-only constants (read_code)
and from the branches the trace took (a je taken after ``test r12, r12``:
r12 was 0), and flow through the instructions' rules (rules.py, emulator.py)
both ways; a learned segment wakes the instructions that mention it (a
worklist, seeded with the instructions that need no known register), and
memory is laid out again in rounds, as learned addresses remove barriers
(memory_layout.py: a write's address learned is patched in), until nothing
new is learned.  Two derivations
that disagree are a *conflict*: the window is solved again with that unknown
held unknown (``poison``), and the conflict is counted.
"""

from bisect import bisect_left, bisect_right

import numpy as np

from . import integer_ops, rules
from .classify import DIRECTION_SET
from .kernel_steps import EXACT, KernelSteps
from .memory_layout import MemoryLayout
from .registers import DF, MASK64, RESUME_FLAG, RFLAGS, RIP

_MAX_SOLVES = 4


class Chunk(KernelSteps, MemoryLayout):
    """``structure``: the window's Structure; ``pins``: [(state, {register: value}, byte(address) -> int|None)],
    ``syscalls``: {i: (registers {number: value}, [(address, bytes)], unknown_memory)}; ``volatile``: the memory
    a shared mapping holds, [(low, high)] sorted (generations.py)."""

    def __init__(self, structure, pins, shared, syscalls, emulator, constant, xcr0=None, recorded=None, volatile=()):
        self.structure, self.n = structure, structure.n
        self.effects, self.nexts, self.active = structure.effects, structure.nexts, structure.active
        self.starts, self.mentions = structure.starts, structure.mentions
        self.pins, self.shared, self.syscalls, self.emulator, self.constant = pins, shared, syscalls, emulator, constant
        self.segment = structure.segment
        self.xcr0 = xcr0  # the state components enabled, where a known state says: how far an xsave reaches
        self.recorded = recorded  # (states, rows, [(register, column)]) a recorder saw, or None
        self.volatile = volatile
        self.conflicts = 0
        self._pin_cache = [{} for _ in pins]
        self.poison = set()
        self._settle()

    def register(self, register, state):
        return None if register == RIP else self.values[register][self.segment(register, state)]

    def add_pin(self, pin):
        """One more known state (a neighbour that learned more since): what it teaches joins what is known."""
        self.pins.append(pin)
        self._pin_cache.append({})
        state, registers, view = pin
        for register, value in registers.items():
            self._learn(register, state, value)
        if self.memory is not None and view is not None:
            self.memory.add_pin(state, self._pinned(len(self.pins) - 1))
        self._run()
        if self.found:
            self.conflicts += len(self.found)
            self.poison |= self.found
            self._settle()

    # -- solving ------------------------------------------------------------------------------------------------

    def _settle(self):
        """Solves the window; each conflict found is held unknown in the next try."""
        for _ in range(_MAX_SOLVES):
            found = self._solve()
            if not found:
                break
            self.conflicts += len(found)
            self.poison |= found

    def _solve(self):
        self.values = [[None] * len(starts) for starts in self.starts]
        self.found = set()
        self.loaded, self.stored = {}, {}  # (i, access) -> value: memory read / written, as known
        self.facts = {}  # (i, access) -> value: what the instructions say they read or wrote
        self.addresses = {}  # (i, access) -> address, once known
        self.extents = {}  # (i, access) -> the size of an area whose extent its address registers decide
        self.bounded = {}  # i -> [(address, size)]: the most an unrecorded system call may write, from its arguments
        self.saved = {}  # (delivery, register) -> the interrupted value its signal frame saved
        self.frames = {}  # delivery -> the bytes its signal frame took (None: its address unknown), as laid out
        self.memory = None
        self.new_writes, self.rebuild = [], False  # writes whose address was learned since the layout; or more
        self.work = {i for i in range(self.n) if self.active[i] and self.effects[i].seed} | self.structure.zero
        self.work |= self.structure.deliveries.keys()
        for state, registers, _ in self.pins:
            for register, value in registers.items():
                self._learn(register, state, value)
        if self.recorded is not None:
            self._seen()
        return self._run()

    def _seen(self):
        """Each segment holding a state the recorder saw takes that state's value; rflags without RF, which an
        rt_sigreturn after a fault restores and the next instruction done clears, inside one segment (the state
        a recorder saw there is shown as it was: ThreadValues.registers_at)."""
        states, rows, registers = self.recorded
        for register, column in registers:
            starts = self.starts[register]
            found = np.searchsorted(states, starts)  # the first seen state of each segment, if inside it
            ends = [*starts[1:], self.n + 1]
            steady = ~RESUME_FLAG if register == RFLAGS else MASK64
            for index, at in enumerate(found.tolist()):
                if at < len(states) and states[at] < ends[index]:
                    self._set(register, index, int(rows[at, column]) & steady)

    def _run(self):
        """The worklist, and the memory rebuilt while learned addresses change it, until nothing new is learned."""
        while True:
            while self.work:
                self._apply(self.work.pop())
            if self.memory is not None and not self.relayout:
                return self.found
            self._layout()

    def _learn(self, register, state, value):
        if register == RIP or value is None:
            return
        if register == RFLAGS:  # the direction flag is rflags' bit 10 (registers.DF)
            self._learn(DF, state, value >> 10 & 1)
        index = self.segment(register, state)
        if not self._set(register, index, value):
            return
        root, offset = self.structure.find((register, index))
        for (other, other_index), other_offset in self.structure.members.get(root, ()):
            self._set(other, other_index, (value - offset + other_offset) & MASK64)

    def _set(self, register, index, value):
        """Gives a segment its value and wakes the instructions that mention it; True when it was news."""
        key = (register, self.starts[register][index])
        if key in self.poison:
            return False
        current = self.values[register][index]
        if current is not None:
            if current != value:
                self.found.add(key)
            return False
        self.values[register][index] = value
        first = self.starts[register][index]
        last = self.starts[register][index + 1] - 1 if index + 1 < len(self.starts[register]) else self.n
        mentions = self.mentions[register]
        self.work.update(mentions[bisect_left(mentions, first - 1) : bisect_right(mentions, last)])
        return True

    def _apply(self, i):
        effect = self.effects[i]
        if i in self.structure.deliveries:
            self._deliver(i, effect, self.structure.deliveries[i])
            return

        def before(register):
            return effect.address if register == RIP else self.register(register, i)

        def after(register):
            return self.register(register, i + 1)

        if effect.accesses:  # most instructions touch no memory
            self._find_addresses(i, effect, before)
        regs, stores = {}, {}
        if effect.kind in EXACT:
            regs, stores = rules.forward(effect, before, lambda access: self.loaded.get((i, access)))
        elif effect.kind == "generic":
            loads = {k: self.loaded[(i, k)] for k in range(len(effect.accesses)) if (i, k) in self.loaded}
            computed = integer_ops.compute(effect, before, loads)
            regs, stores = computed if computed is not None else self.emulator.run(effect, before, loads) or ({}, {})
            if effect.mnemonic in DIRECTION_SET:
                regs = {**regs, DF: DIRECTION_SET[effect.mnemonic]}
        elif effect.kind == "syscall":
            regs, _ = rules.forward(effect, before, None)
            if i in self.syscalls:  # recorded: what it does not list it left as it was
                result = self.syscalls[i][0]
                for register in effect.writes - result.keys() - {RIP}:
                    self._learn(register, i + 1, before(register))
                    self._learn(register, i, after(register))
                regs |= result
            elif i not in self.bounded:
                self._bound_syscall(i, before)
        elif (i, 0) in self.extents and self.spans_exactly(i, 0):  # a stos's whole area (an xsave's: no pattern)
            value = rules.stored_pattern(effect, before, self.extents[(i, 0)])
            stores = {} if value is None else {0: value}
        for register, value in regs.items():
            self._learn(register, i + 1, value)
        for access, value in stores.items():
            self._fact(i, access, value)
        if effect.kind not in EXACT:
            return
        memory = (lambda access: self.loaded.get((i, access)), lambda access: self.stored.get((i, access)))

        def wide(register):
            return self.structure.wide(register, i)

        regs, loads = rules.backward(effect, before, after, memory, self.nexts[i], wide)
        for register, value in regs.items():
            self._learn(register, i, value)
        for access, value in loads.items():
            self._fact(i, access, value)
        if i in self.structure.zero:
            regs, outputs, loads = rules.when_zero(effect, before, memory[0], wide)
            for state, learned in ((i, regs), (i + 1, outputs)):
                for register, value in learned.items():
                    self._learn(register, state, value)
            for access, value in loads.items():
                self._fact(i, access, value)
