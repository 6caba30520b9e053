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
memory is laid out again in rounds, as learned addresses remove barriers (a
write's address learned is patched into the layout), until nothing new is
learned.  Two derivations
that disagree are a *conflict*: the window is solved again with that unknown
held unknown (``poison``), and the conflict is counted.
"""

from bisect import bisect_left, bisect_right, insort
from collections import defaultdict

import numpy as np

from . import integer_ops, rules
from .effects import StateArea
from .generations import Generations
from .kernel_steps import EXACT, KernelSteps
from .registers import GPRS, MASK64, RIP

_MAX_SOLVES = 4


class Chunk(KernelSteps):
    """``structure``: the window's Structure; ``pins``: [(state, {register: value}, byte(address) -> int|None)],
    ``syscalls``: {i: (registers {number: value}, [(address, bytes)], unknown_memory)}."""

    def __init__(self, structure, pins, shared, syscalls, emulator, constant, xcr0=None, recorded=None):
        self.structure, self.n = structure, structure.n
        self.effects, self.nexts, self.active = structure.effects, structure.nexts, structure.active
        self.starts, self.mentions = structure.starts, structure.mentions
        self.pins, self.shared, self.syscalls, self.emulator, self.constant = pins, shared, syscalls, emulator, constant
        self.segment = structure.segment
        self.xcr0 = xcr0  # the state components enabled, where a known state says: how far an xsave reaches
        self.recorded = recorded  # (states, rows, [(register, column)]) a recorder saw, or None
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
        """Each segment holding a state the recorder saw takes that state's value."""
        states, rows, registers = self.recorded
        for register, column in registers:
            starts = self.starts[register]
            found = np.searchsorted(states, starts)  # the first seen state of each segment, if inside it
            ends = [*starts[1:], self.n + 1]
            for index, at in enumerate(found.tolist()):
                if at < len(states) and states[at] < ends[index]:
                    self._set(register, index, int(rows[at, column]))

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

        self._find_addresses(i, effect, before)
        regs, stores = {}, {}
        if effect.kind in EXACT:
            regs, stores = rules.forward(effect, before, lambda access: self.loaded.get((i, access)))
        elif effect.kind == "generic":
            loads = {k: self.loaded[(i, k)] for k in range(len(effect.accesses)) if (i, k) in self.loaded}
            computed = integer_ops.compute(effect, before, loads)
            regs, stores = computed if computed is not None else self.emulator.run(effect, before, loads) or ({}, {})
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

    # -- memory -------------------------------------------------------------------------------------------------

    def _find_addresses(self, i, effect, before):
        for k, (kind, ref, size) in enumerate(effect.accesses):
            if (i, k) not in self.addresses:
                address = ref.address(before)
                if address is not None and type(ref) is StateArea:
                    size = ref.extent(before, self.xcr0)
                    if size is None:
                        address = None
                    else:
                        self.extents[(i, k)] = size
                if address is not None:
                    self.addresses[(i, k)] = address
                    if kind == "w" or self.memory is None:
                        self.relayout = True  # a write no longer a barrier, or a new one: the layout changes
                        self.new_writes.append((i, k))
                    else:
                        access = (i, k, kind, address, size)
                        self.memory.add(access)
                        insort(self.known_accesses, access)
                        if (i, k) in self.facts:  # what the load read, said before its address was known
                            self.memory.fact(access, self.facts[(i, k)])

    def _fact(self, i, k, value):
        if self.facts.get((i, k)) == value:
            return
        self.facts[(i, k)] = value
        kind, size = self.effects[i].accesses[k][0], self._size(i, k)
        if self.memory is not None and (i, k) in self.addresses:
            self.memory.fact((i, k, kind, self.addresses[(i, k)], size), value)
        elif self.memory is not None and self.crossings.get(i) == k:
            self.memory.crossed(i)

    def _wake(self, i, k, kind, value):
        target = self.stored if kind == "w" else self.loaded
        if target.get((i, k)) != value:
            target[(i, k)] = value
            self.work.add(i)

    def _layout(self):
        """Generations from the addresses known now, with every fact so far."""
        self.relayout = False
        if self.memory is not None and not (self.rebuild or self.poison or self.shared):
            self._patch()
            return
        self.rebuild, self.new_writes = False, []
        self.unknown_writes = set()  # instructions that may write memory at an address nobody knows
        self.crossings = {}  # those whose barrier is one such write (and nothing else): instruction -> its access
        barriers, writes, spans = [], defaultdict(list), []
        for i, effect in enumerate(self.effects):
            if not self.active[i]:
                barriers.append(i)
                continue
            if effect.kind == "syscall" and i not in self.syscalls:
                spans += [(i, address, address + size) for address, size in self.bounded.get(i, ())]
            if i in self.structure.deliveries:
                extent = self.frames[i] = self._frame_extent(i)
                spans += [(i, *extent)] if extent is not None else []
            unknown = False  # a write at an unknown address: a barrier (_own), found without asking
            for k, (kind, _, size) in enumerate(effect.accesses):
                address = self.addresses.get((i, k)) if kind == "w" else 0
                if address is None:
                    unknown = True
                elif kind == "w":
                    for byte in range(address, address + self.extents.get((i, k), size)):
                        writes[byte].append(i)
            for address, data in self.syscalls.get(i, ((), (), 0))[1] if effect.kind == "syscall" else ():
                spans.append((i, address, address + len(data)))
            own = unknown or ((effect.barrier or effect.kind == "syscall" or i in self.frames) and self._own(i))
            if own:
                self._unknown_write(i)
            if own or self.shared:
                barriers.append(i)
        pins = [(state, self._pinned(number)) for number, (state, _, view) in enumerate(self.pins) if view is not None]
        for i, (_, memory, _) in self.syscalls.items():  # what a system call wrote: known from after it
            if self.active[i] and self.effects[i].kind == "syscall" and memory:
                pins.append((i + 1, spans_reader(memory)))
        self.memory = Generations(
            self.n, barriers, writes, pins, self.poison, self.found, self._wake, self.constant, self._crossing, spans
        )
        for i, extent in self.frames.items():  # the slots of the interrupted registers, in each frame known
            for register in (*GPRS, RIP) if extent is not None else ():
                self.memory.add(self._slot(i, register))
                if (i, register) in self.saved:
                    self.memory.fact(self._slot(i, register), self.saved[(i, register)])
        self.known_accesses = []
        for (i, k), address in sorted(self.addresses.items()):
            kind, size = self.effects[i].accesses[k][0], self._size(i, k)
            self.known_accesses.append((i, k, kind, address, size))
            self.memory.add(self.known_accesses[-1])
        for (i, k), value in self.facts.items():
            if (i, k) in self.addresses:
                kind, size = self.effects[i].accesses[k][0], self._size(i, k)
                self.memory.fact((i, k, kind, self.addresses[(i, k)], size), value)

    def _own(self, i):
        """Whether instruction i may write memory no known address names: a barrier of its own."""
        effect = self.effects[i]
        if effect.kind == "syscall" and i not in self.syscalls:
            own = i not in self.bounded
        else:
            own = effect.barrier and (effect.kind != "syscall" or self.syscalls[i][2])
        if own or self.frames.get(i, True) is None:
            return True
        return any(kind == "w" and (i, k) not in self.addresses for k, (kind, _, _) in enumerate(effect.accesses))

    def _unknown_write(self, i):
        """Instruction i is a barrier of its own; where one write at an unknown address is all of it, a load before
        it may see through it (generations.py)."""
        self.unknown_writes.add(i)
        effect = self.effects[i]
        unknown = [k for k, access in enumerate(effect.accesses) if access[0] == "w" and (i, k) not in self.addresses]
        if not effect.barrier and not self.shared and len(unknown) == 1 and i not in self.frames:
            self.crossings[i] = unknown[0]
        else:
            self.crossings.pop(i, None)

    def _patch(self):
        """The layout, where all that changed is writes whose address is learned: those instructions write known
        bytes now, and those that wrote nowhere else are barriers no more (Generations.patch)."""
        learned, self.new_writes = self.new_writes, []
        removed = set()
        for i in {i for i, _ in learned}:
            if self._own(i):
                self._unknown_write(i)
            else:
                removed.add(i)
                self.unknown_writes.discard(i)
                self.crossings.pop(i, None)
        accesses = [(i, k, "w", self.addresses[(i, k)], self._size(i, k)) for i, k in learned]
        self.memory.patch(removed, [(i, address, address + size) for i, _, _, address, size in accesses])
        for access in accesses:
            insort(self.known_accesses, access)
            self.memory.add(access)
            if access[:2] in self.facts:
                self.memory.fact(access, self.facts[access[:2]])

    def _size(self, i, k):
        """The bytes access k of instruction i touches (an xsave's area: as far as its components reach)."""
        return self.extents.get((i, k), self.effects[i].accesses[k][2])

    def _crossing(self, i):
        """``(size, value)`` of instruction i's one write at an unknown address, where that is all its barrier."""
        k = self.crossings.get(i)
        value = None if k is None else self.facts.get((i, k))
        return None if value is None else (self.effects[i].accesses[k][2], value)

    def _pinned(self, number):
        """Pin ``number``'s memory, its known bytes kept.  Two neighbours pin each other (a window solved again with
        what its left neighbour learned): a byte asked while it is being asked is not known from there."""
        cache, view, asking = self._pin_cache[number], self.pins[number][2], set()

        def read(byte):
            value = cache.get(byte)
            if value is None and byte not in asking:
                asking.add(byte)
                value = view(byte)
                asking.discard(byte)
                if value is not None:
                    cache[byte] = value
            return value

        return read

    def memory_byte(self, state, byte):
        """The byte's value at ``state``, or None."""
        return self.memory.byte(state, byte)


def spans_reader(memory):
    """``byte -> value`` of the buffers ``[(address, bytes)]`` the kernel wrote (a system call's output, a signal
    frame; None elsewhere)."""

    def read(byte):
        for address, data in memory:
            if address <= byte < address + len(data):
                return data[byte - address]
        return None

    return read
