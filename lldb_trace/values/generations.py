"""A window's memory as generations: a byte keeps its value from one write to it (or barrier) to the next.

A generation is known when anything inside it says its value: the store that
began it, a load within it, a pin (a known state) within it, a system call's
recorded output.  Learning one wakes every access of that generation whose
bytes are now all known (``wake(i, access, kind, value)``).  The layout (which
writes and barriers split which bytes) changes as the window learns where a
write went: the write is patched in (``patch``: a barrier no more, its
generations joined to those before), which touches the accesses up to the
next barrier only; any other change makes the window build a new object.

A barrier that is one write of known value at an unknown address is seen
through by a load before it whose bytes are known after it: had the write hit
any of them, they would hold its bytes there (nothing else writes them in
between); when no placement of the written bytes matches what they hold
after, it did not hit them, and they held the same before.

A *volatile* byte (a shared mapping's: another process, or another mapping of
the same memory, may change it between any two instructions) is known only
where a pin says it, at that state alone: its accesses are not laid out.
"""

from bisect import bisect_left, bisect_right, insort
from collections import defaultdict

_SHIFT = 32  # a generation's key: its byte shifted, and its start + 1 below (an int: a tuple per byte was
# millions of objects for Python's collector to walk, and slower to hash)


def generation_key(byte, start):
    """The key of the byte's generation that begins at instruction ``start`` (-1: before the window)."""
    return (byte << _SHIFT) | (start + 1)


class Generations:
    """``barriers``: sorted instructions after which no byte is known to be what it was; ``writes``: byte ->
    sorted instructions writing it; ``pins``: [(state, byte -> value | None)]; ``poison``: generation keys held
    unknown; ``found``: where conflicts are added."""

    def __init__(self, n, barriers, writes, pins, poison, found, wake, constant, crossing, spans=(), volatile=()):
        self.n, self.barriers, self.writes = n, barriers, writes
        self.volatile = volatile  # sorted, disjoint [(low, high)]: bytes low..high-1 are volatile (module doc)
        self._volatile_lows = [low for low, _ in volatile]
        self.spans = spans  # [(i, low, high)]: instruction i wrote bytes low..high-1 (a system call's buffers)
        self.pins, self.poison, self.found, self.wake = pins, poison, found, wake
        self.constant = constant  # byte -> the value of code and constants, which no instruction writes
        self.crossing = crossing  # barrier -> (size, value) of its one write at an unknown address, or None
        self.values = {}  # generation_key -> value
        # generation_key -> the accesses reading or starting it: one access (a tuple), or a list of them (most
        # generations have one user: a list each was a tenth of the window's memory)
        self.users = {}
        self.seen = set()  # bytes whose pinned values are in
        self.barrier_set = set(barriers)
        self.ending = defaultdict(list)  # barrier -> the loads whose bytes' generations it ends
        self.before_barrier = {}  # and the other way round
        self.at = defaultdict(list)  # instruction -> its accesses added
        self.pinned = defaultdict(set)  # generation start -> the bytes a pin said there (patch finds them)
        self._checks, self._checking = [], False  # accesses to check, and whether a check is running them

    def generation(self, byte, state):
        """``(start, end)``: the instruction that began the byte's generation at ``state`` (-1: before the window)
        and the instruction that ends it (n: after the window); the generation holds states start+1 .. end."""
        writes = self._writes_of(byte)
        w = bisect_left(writes, state)
        b = bisect_left(self.barriers, state)
        start = writes[w - 1] if w else -1
        if b and self.barriers[b - 1] > start:
            start = self.barriers[b - 1]
        end = writes[w] if w < len(writes) else self.n
        if b < len(self.barriers) and self.barriers[b] < end:
            end = self.barriers[b]
        return start, end

    def _barrier_before(self, state):
        """The last barrier before ``state`` (-1: none): where every byte's generation at ``state`` begins at the
        earliest."""
        b = bisect_left(self.barriers, state)
        return self.barriers[b - 1] if b else -1

    def _start(self, byte, state, barrier):
        """``generation(byte, state)[0]``, given ``_barrier_before(state)`` (the same for every byte of an access)."""
        writes = self._writes_of(byte)
        if writes:
            w = bisect_left(writes, state)
            if w and writes[w - 1] > barrier:
                return writes[w - 1]
        return barrier

    def _writes_of(self, byte):
        """The instructions that write ``byte``, in order: stores, and system calls (``spans``: a few ranges,
        kept whole rather than byte by byte, a brk's new pages being 132 KiB)."""
        writes = self.writes.get(byte, ())
        if self.spans:
            more = [i for i, low, high in self.spans if low <= byte < high]
            if more:
                return sorted((*writes, *more))
        return writes

    def _pin(self, byte):
        if byte in self.seen:
            return
        self.seen.add(byte)
        for state, read in self.pins:
            value = read(byte)
            if value is not None:
                self.pinned[self.know(byte, state, value)].add(byte)

    def add_pin(self, state, read):
        """A known state added after the layout: the bytes already met learn from it too."""
        self.pins.append((state, read))
        for byte in list(self.seen):
            value = read(byte)
            if value is not None:
                self.pinned[self.know(byte, state, value)].add(byte)

    def add(self, access):
        """An access ``(i, k, kind, address, size)`` whose address is known: a load reads state i, a store begins
        the generation of state i + 1."""
        i, _, kind, address, size = access
        if self.volatile and self._volatile(address + size - 1, address):
            return
        state = i + 1 if kind == "w" else i
        b = bisect_left(self.barriers, state)
        barrier_before = self.barriers[b - 1] if b else -1
        barrier_after = self.barriers[b] if b < len(self.barriers) else self.n
        ending, common = kind == "r", None  # whether every byte's generation ends at one barrier writing none
        seen, users, writes_of = self.seen, self.users, self._writes_of if self.spans else self.writes.get
        for byte in range(address, address + size):
            if byte not in seen:
                self._pin(byte)
            start, end = barrier_before, barrier_after
            writes = writes_of(byte)
            if writes:
                w = bisect_left(writes, state)
                if w and writes[w - 1] > start:
                    start = writes[w - 1]
                if w < len(writes) and writes[w] <= end:
                    end, ending = writes[w], False
            key = (byte << _SHIFT) | (start + 1)
            found = users.get(key)
            if found is None:
                users[key] = access
            elif type(found) is list:
                found.append(access)
            else:
                users[key] = [found, access]
            if common is None:
                common = end
            elif common != end:
                ending = False
        if ending and common in self.barrier_set:
            self.ending[common].append(access)
            self.before_barrier[access] = common
        self.at[i].append(access)
        self._check(access)

    def patch(self, removed, added):
        """The layout changed as a write's address became known: each ``added`` ``(i, low, high)`` writes those
        bytes, and the ``removed`` barriers are barriers no more.  A generation that began at a removed barrier
        joins the one before it (what either knew, both know), so only the accesses between that barrier and the
        next are looked at again, not the window (chunk.py rebuilds the whole layout otherwise)."""
        for i, low, high in added:
            for byte in range(low, high):
                insort(self.writes[byte], i)
        pending = set()
        for i in {i for i, _, _ in added} - set(removed):  # a barrier still, but one that writes these bytes now
            self._end_again(i, pending)
        for barrier in sorted(removed, reverse=True):
            b = bisect_left(self.barriers, barrier)
            following = self.barriers[b + 1] if b + 1 < len(self.barriers) else self.n
            del self.barriers[b]
            self.barrier_set.discard(barrier)
            met = self.pinned.pop(barrier, set())  # the bytes known or read after it, a pin's included
            for i in range(barrier, following + 1):
                for access in self.at.get(i, ()):
                    met.update(range(access[3], access[3] + access[4]))
            for byte in met:
                if generation_key(byte, barrier) in self.users or generation_key(byte, barrier) in self.values:
                    self._merge(byte, barrier, pending)
            self._end_again(barrier, pending)  # the generations of the loads it ended run on past it now
        for access in pending:
            self._check(access)

    def _merge(self, byte, barrier, pending):
        """Joins the byte's generation that began at ``barrier`` (no barrier now) to the one before."""
        old = generation_key(byte, barrier)
        if barrier in self._writes_of(byte):
            return  # the instruction writes this byte: its generation still begins there
        start = self._start(byte, barrier, self._barrier_before(barrier))
        self.pinned[start].add(byte)  # its value may be a pin's: a later patch must find it
        users = self._users_of(self.users.pop(old, None))
        new = generation_key(byte, start)
        self.users[new] = [*self._users_of(self.users.get(new)), *users]  # made even if empty: patch looks for it
        pending.update(users)  # they may learn what the generation before knew
        value = self.values.pop(old, None)
        if value is not None:  # what it knew, the generation before knows (state barrier is in it)
            self.know(byte, barrier, value, pending=pending)

    def _end_again(self, barrier, pending):
        """The loads whose bytes ``barrier`` ended, where the layout there changed: where they end now."""
        for access in self.ending.pop(barrier, ()):
            del self.before_barrier[access]
            end = self._end_of(access)
            if end is not None:
                self.ending[end].append(access)
                self.before_barrier[access] = end
            pending.add(access)

    def _end_of(self, access):
        """The barrier where every byte of the load ``access`` stops being what it read, when it is one barrier
        that writes none of them (what a load may see through), else None."""
        _, _, kind, address, size = access
        ends = {self.generation(byte, access[0])[1] for byte in range(address, address + size)}
        if kind != "r" or len(ends) != 1:
            return None
        end = ends.pop()
        if end not in self.barrier_set or any(end in self._writes_of(byte) for byte in range(address, address + size)):
            return None
        return end

    @staticmethod
    def _users_of(found):
        """A ``users`` entry (or None) as a sequence of accesses."""
        if found is None:
            return ()
        return found if type(found) is list else (found,)

    def crossed(self, barrier):
        """The value of ``barrier``'s write is known now: the loads before it may see through it."""
        for access in self.ending.get(barrier, ()):
            self._check(access)

    def know(self, byte, state, value, barrier=None, pending=None):
        """The byte holds ``value`` at ``state``; the accesses this completes are checked now, or added to
        ``pending`` for the caller to check once (a fact's bytes wake the same accesses).  Returns where the
        byte's generation there begins."""
        if barrier is None:
            barrier = self._barrier_before(state)
        start = self._start(byte, state, barrier)
        key = (byte << _SHIFT) | (start + 1)
        if key in self.poison:
            return start
        current = self.values.get(key)
        if current is None:
            current = self.constant(byte)
        if current == value:
            return start
        if current is not None:
            self.found.add(key)
            return start
        self.values[key] = value
        woken = [*self._users_of(self.users.get(key))]
        for access in self.ending.get(start, ()):  # a generation after a barrier: the loads before may see through
            if access[3] <= byte < access[3] + access[4]:
                woken.append(access)
        if pending is None:
            for access in woken:
                self._check(access)
        else:
            pending.update(woken)
        return start

    def fact(self, access, value):
        """What an instruction says its access read or wrote."""
        i, _, kind, address, size = access
        state = i + 1 if kind == "w" else i
        barrier, pending = self._barrier_before(state), set()
        for offset, byte in enumerate(value.to_bytes(size, "little")):
            if not (self.volatile and self._volatile(address + offset)):
                self.know(address + offset, state, byte, barrier, pending)
        for woken in pending:
            self._check(woken)

    def _check(self, access):
        """Wakes the access's instruction when its bytes are all known (a load may see through, which checks the
        loads that teaches in turn: queued, not recursed into, for a chain of them runs as long as a buffer)."""
        self._checks.append(access)
        if self._checking:
            return  # the check below this call runs the queue
        self._checking = True
        try:
            while self._checks:
                self._check_one(self._checks.pop())
        finally:
            self._checking = False

    def _check_one(self, access):
        i, k, kind, address, size = access
        state = i + 1 if kind == "w" else i
        data, barrier = [], self._barrier_before(state)
        for byte in range(address, address + size):
            key = (byte << _SHIFT) | (self._start(byte, state, barrier) + 1)
            value = self.values.get(key)
            if value is None and key not in self.poison:
                value = self.constant(byte)
            if value is None:
                if kind == "r":
                    self._see_through(access)
                return
            data.append(value)
        self.wake(i, k, kind, int.from_bytes(bytes(data), "little"))

    def _see_through(self, access):
        """The bytes of a load, from after the barrier that ends their generation (see the module doc)."""
        end = self.before_barrier.get(access)
        if end is None:
            return
        i, _, _, address, size = access
        if size > 64:  # a state area an xrstor reads (up to 2,688 bytes): not worth its placements
            return
        written = self.crossing(end)
        if written is None:
            return
        after = [self.byte(end + 1, byte) for byte in range(address, address + size)]
        if None in after:
            return
        length, data = written[0], written[1].to_bytes(written[0], "little")
        for placed in range(address - length + 1, address + size):  # where the write may have started
            if all(after[j] == data[address + j - placed] for j in range(size) if 0 <= address + j - placed < length):
                return  # these bytes may be the write's
        for offset, value in enumerate(after):
            self.know(address + offset, i, value)

    def byte(self, state, byte):
        """The byte's value at ``state``, or None."""
        if self.volatile and self._volatile(byte):
            return next((value for at, read in self.pins if at == state and (value := read(byte)) is not None), None)
        start, end = self.generation(byte, state)
        key = generation_key(byte, start)
        value = self.values.get(key)
        if value is not None or key in self.poison:
            return value
        value = self.constant(byte)
        if value is not None:
            return value
        for pin_state, read in self.pins:
            if start < pin_state <= end:
                value = read(byte)
                if value is not None:
                    return value
        return None

    def _volatile(self, last, first=None):
        """Whether byte ``last`` is volatile, or any of ``first``..``last``."""
        k = bisect_right(self._volatile_lows, last) - 1
        return k >= 0 and (last if first is None else first) < self.volatile[k][1]
