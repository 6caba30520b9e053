"""A window's memory, laid out for its Chunk (chunk.py): which accesses have known addresses, which
instructions are barriers (a write no known address names, an unrecorded system call, a signal frame
whose address is unknown), and the Generations (generations.py) built from them.

Solving learns addresses as it goes.  A write whose address is learned is patched into the layout
(``_patch``: its instruction writes known bytes now, and is a barrier no more unless something else
makes it one); anything else that changes the layout (a signal frame's extent, a system call's bounds,
a conflict held unknown, a window other threads share) lays it all out again.
"""

from collections import defaultdict
from functools import partial

from .effects import StateArea, StringArea
from .generations import Generations
from .registers import GPRS, RIP


class MemoryLayout:
    """The memory part of a Chunk's solving: the methods use its addresses, facts and worklist."""

    def _find_addresses(self, i, effect, before):
        for k, (kind, ref, size) in enumerate(effect.accesses):
            if (i, k) not in self.addresses:
                address = ref.address(before)
                if address is not None and type(ref) in (StateArea, StringArea):
                    size = ref.extent(before, self.xcr0)
                    if size is None:
                        address = None
                    else:
                        self.extents[(i, k)] = size
                if address is not None:
                    self.addresses[(i, k)] = address
                    if kind == "w":
                        self.new_writes.append((i, k))
                    if kind == "w" or self.memory is None:
                        self.relayout = True  # a write no longer a barrier, or a new one: the layout changes
                    else:
                        self.memory.add(self._access(i, k))
                        if (i, k) in self.facts:  # what the load read, said before its address was known
                            self.memory.fact(self._access(i, k), self.facts[(i, k)])

    def _fact(self, i, k, value):
        if self.facts.get((i, k)) == value:
            return
        self.facts[(i, k)] = value
        if self.memory is not None and (i, k) in self.addresses:
            self.memory.fact(self._access(i, k), value)
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
            self.n, barriers, writes, pins, self.poison, self.found, self._wake, self.constant, self._crossing, spans,
            self.volatile,
        )  # fmt: skip
        for i, extent in self.frames.items():  # the slots of the interrupted registers, in each frame known
            for register in (*GPRS, RIP) if extent is not None else ():
                self.memory.add(self._slot(i, register))
                if (i, register) in self.saved:
                    self.memory.fact(self._slot(i, register), self.saved[(i, register)])
        for access in self.known_accesses:
            self.memory.add(access)
        for (i, k), value in self.facts.items():
            if (i, k) in self.addresses:
                self.memory.fact(self._access(i, k), value)

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
        accesses = [self._access(i, k) for i, k in learned]
        self.memory.patch(removed, [(i, address, address + size) for i, _, _, address, size in accesses])
        for access in accesses:
            self.memory.add(access)
            if access[:2] in self.facts:
                self.memory.fact(access, self.facts[access[:2]])

    @property
    def known_accesses(self):
        """Every access whose address is known, as ``(i, k, kind, address, size)``, in order."""
        return [self._access(i, k) for i, k in sorted(self.addresses)]

    def spans_exactly(self, i, k):
        """Whether access k of instruction i touched every byte of the area it was laid out with: not a masked or
        compressing store's, not a movs's or stos's laid out both ways (the direction flag unknown then), nor one a
        signal or the trace's end stopped partway through its iterations (its next position is not its
        fall-through)."""
        effect = self.effects[i]
        area = effect.accesses[k][1]
        if effect.partial:  # a masked store: which bytes it wrote, the mask said
            return False
        if type(area) is not StringArea:
            return True
        get = partial(self.register, state=i)
        laid_out = (self.addresses[(i, k)], self.extents[(i, k)])
        exact = area.direction(get) is not None and (area.address(get), area.extent(get)) == laid_out
        return exact and self.nexts[i] == effect.next_address

    def _access(self, i, k):
        return i, k, self.effects[i].accesses[k][0], self.addresses[(i, k)], self._size(i, k)

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
