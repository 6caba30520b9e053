"""The fixed part of a window: its registers' segments, the relations between them, the zero results the trace
shows; what solving the window (chunk.py) starts from, however often it is solved again.

A register keeps its value from one instruction that writes it to the next:
that stretch is a *segment*, one unknown for the whole stretch.  Segments
that differ by a constant (push and pop on rsp, ``mov rbp, rsp``, ``add rbx,
4``, a ``cmp a, b`` the trace shows equal) form a class: one value learned
anywhere in it teaches all the others.  A register stored to a slot and
loaded back from it is the same value too (slots.py).
"""

from array import array
from bisect import bisect_right

import numpy as np

from . import signals, slots
from .registers import DF, GPRS, REGISTERS, RFLAGS, VECTOR

_ZERO_EXTENDING = frozenset(("mov", "movx", "lea", "alu", "unary"))  # a 32-bit destination clears the upper half


class Structure:
    """``effects[i]`` (None: nothing known), ``nexts[i]`` (the next position's address or None), ``cuts[i]``
    (nothing carries from state i to i+1), ``deliveries`` ({i: where the thread resumed}: a signal delivered after
    instruction i, signals.py)."""

    def __init__(self, effects, nexts, cuts, shared=False, deliveries=None):
        self.n = len(effects)
        self.effects, self.nexts, self.cuts, self.deliveries = effects, nexts, cuts, deliveries or {}
        self.active = [e is not None and not cut for e, cut in zip(effects, cuts, strict=True)]
        self._segments()
        self._zero_results()
        self._relate()
        self.outgoing, self.linked, self._slot_steps = ([], []), shared, []  # a shared window follows no slots
        if not shared:  # other threads may write any slot between two instructions of this one
            self._slot_steps = slots.plan(self)
            self.outgoing = slots.outgoing(self, slots.follow(self, self._slot_steps, {}))

    def link(self, carried):
        """Takes what the window before knew at its end (its ``outgoing``): which registers there differ by a
        constant, and the slots it left stored (slots.py)."""
        if self.linked:
            return
        self.linked = True
        start = slots.incoming(self, carried)
        if start or carried[0]:
            slots.follow(self, self._slot_steps, start)
        self._slot_steps = []  # linked once: the plan is not needed again (a long trace keeps many windows)

    def _segments(self):
        """Each register's segments (``starts``: the first state of each) and the instructions that mention it."""
        starts = [[0] for _ in range(REGISTERS)]
        mentions = [[] for _ in range(REGISTERS)]
        for i, effect in enumerate(self.effects):
            if not self.active[i]:
                for register in range(REGISTERS):
                    starts[register].append(i + 1)
                continue
            delivery = i in self.deliveries  # the kernel sets some registers too, and saves them all
            for register in effect.writes | signals.CLOBBERED if delivery else effect.writes:
                starts[register].append(i + 1)
            for register in set(effect.mentioned) | set(GPRS) if delivery else effect.mentioned:
                mentions[register].append(i)
        self.starts, self.mentions = starts, mentions
        # each state's segment, for the registers solving asks most (over 90% of the asking: a bisect each was a
        # twentieth of the time); the vector lanes' few segments are bisected
        self._segment_of = [
            _segment_map(starts[register], self.n) if register < VECTOR or register == DF else None
            for register in range(REGISTERS)
        ]

    def _zero_results(self):
        """The flag-setting instructions whose result the trace says was zero: a je taken or a jne not taken."""
        self.zero = set()
        for i, effect in enumerate(self.effects):
            if (
                not self.active[i]
                or effect.mnemonic not in ("je", "jne")
                or self.nexts[i] is None
                or i in self.deliveries
            ):
                continue
            target = effect.operands[0].imm
            if target == effect.next_address or (self.nexts[i] == target) != (effect.mnemonic == "je"):
                continue
            writer = self.starts[RFLAGS][self.segment(RFLAGS, i)] - 1
            if writer >= 0 and self.active[writer] and self.effects[writer].kind in ("alu", "unary"):
                self.zero.add(writer)

    def wide(self, register, state):
        """Whether the register's value at ``state`` was written as 32 bits (zero-extended: its low half is all)."""
        writer = self.starts[register][self.segment(register, state)] - 1
        if writer < 0 or not self.active[writer] or (writer in self.deliveries and register in signals.CLOBBERED):
            return False
        effect = self.effects[writer]
        first = effect.operands[0] if effect.operands else None
        return (
            effect.kind in _ZERO_EXTENDING
            and effect.mnemonic not in ("cmp", "test")
            and first is not None
            and first.kind == "reg"
            and first.reg == (register, 0, 32)
        )

    def _relate(self):
        """Classes of segments that differ by known constants (weighted union-find, members kept per root)."""
        self.root, self.members = {}, {}  # segment -> (root, value - root's value); root -> [(segment, offset)]
        for i, effect in enumerate(self.effects):
            if self.active[i]:
                delivery = i in self.deliveries
                for output, source, constant in effect.related:
                    if not (delivery and output in signals.CLOBBERED):
                        self.union((output, self.segment(output, i + 1)), (source, self.segment(source, i)), constant)
        for i in self.deliveries:  # the handler's rdx and rsi point into the frame at its rsp
            for output, source, constant in signals.RELATIONS:
                self.union((output, self.segment(output, i + 1)), (source, self.segment(source, i + 1)), constant)
        for i in self.zero:  # cmp a, b / sub a, b / xor a, b with a zero result: a == b
            effect = self.effects[i]
            first, second = (*effect.operands, None)[:2]
            if (
                effect.mnemonic in ("cmp", "sub", "xor")
                and first.kind == second.kind == "reg"
                and first.reg[2] == second.reg[2] == 64
                and first.reg[0] != second.reg[0]
            ):
                a, b = first.reg[0], second.reg[0]
                self.union((a, self.segment(a, i)), (b, self.segment(b, i)), 0)

    def find(self, segment):
        return self.root.get(segment, (segment, 0))

    def union(self, a, b, constant):
        """a = b + constant (the smaller class joins the larger: slots merge classes of thousands of segments)."""
        (root_a, off_a), (root_b, off_b) = self.find(a), self.find(b)
        if root_a == root_b:
            return  # already related (a loop adds the same relation again, or a different one: ignored)
        shift = off_b + constant - off_a  # root_a = root_b + shift
        group_a = self.members.get(root_a) or [(root_a, 0)]
        group_b = self.members.get(root_b) or [(root_b, 0)]
        if len(group_a) > len(group_b):
            root_a, root_b, group_a, group_b, shift = root_b, root_a, group_b, group_a, -shift
        self.members.pop(root_a, None)
        self.members[root_b] = group_b
        for segment, offset in group_a:
            self.root[segment] = (root_b, offset + shift)
            group_b.append((segment, offset + shift))

    def segment(self, register, state):
        found = self._segment_of[register]
        return bisect_right(self.starts[register], state) - 1 if found is None else found[state]


def _segment_map(starts, n):
    """``map[state]``: the segment holding each state 0..n, given the segments' first states."""
    lengths = np.diff(np.append(np.asarray(starts, dtype=np.int64), n + 1))
    code, dtype = ("H", np.uint16) if len(starts) <= 0xFFFF else ("I", np.uint32)
    return array(code, np.repeat(np.arange(len(starts), dtype=dtype), lengths).tobytes())
