"""The fixed part of a window: its registers' segments, the relations between them, the zero results the trace
shows; what solving the window (chunk.py) starts from, however often it is solved again.

A register keeps its value from one instruction that writes it to the next:
that stretch is a *segment*, one unknown for the whole stretch.  Segments
that differ by a constant (push and pop on rsp, ``mov rbp, rsp``, ``add rbx,
4``, a ``cmp a, b`` the trace shows equal) form a class: one value learned
anywhere in it teaches all the others.  A register stored to memory and
loaded back from the same address, with no write between that may touch
it, is the same value too (*slots*): a callee's ``push rbp`` and its ``pop
rbp``, a spill and its reload.  The addresses need not be known, only their
class: base registers of one class and equal offsets are one address, and
different offsets in one class are different bytes.
"""

from bisect import bisect_right

from .effects import MemRef
from .registers import REGISTERS, RFLAGS

_GENERAL = 16  # rax..r15: the registers whose slots are followed
_SLOT_ROUNDS = 4  # passes over a window: each may merge classes that let the next match more slots

_ZERO_EXTENDING = frozenset(("mov", "movx", "lea", "alu", "unary"))  # a 32-bit destination clears the upper half


class Structure:
    """``effects[i]`` (None: nothing known), ``nexts[i]`` (the next position's address or None), ``cuts[i]``
    (nothing carries from state i to i+1)."""

    def __init__(self, effects, nexts, cuts, shared=False):
        self.n = len(effects)
        self.effects, self.nexts, self.cuts = effects, nexts, cuts
        self.active = [e is not None and not cut for e, cut in zip(effects, cuts, strict=True)]
        self._segments()
        self._zero_results()
        self._relate()
        self.outgoing, self.linked = ([], []), shared  # (see link); a shared window has no slots to follow
        if not shared:  # other threads may write any slot between two instructions of this one
            self._follow_slots({})
            self.outgoing = (self._edge_relations(), self._outgoing(self._forward_slots({}, relate=False)))

    def link(self, incoming):
        """Takes what the window before knew at its end (its ``outgoing``): which registers there differ by a
        constant, and the slots it left stored; a callee cut in two by the window edge still restores the
        registers it saved."""
        if self.linked:
            return
        self.linked = True
        relations, stored = incoming
        for register, other, constant in relations:
            self._union((register, self.segment(register, 0)), (other, self.segment(other, 0)), constant)
        slots = {}
        for base, at, register, offset in stored:
            root, shift = self.find((base, self.segment(base, 0)))
            slots[(root, shift + at)] = ((register, self.segment(register, 0)), offset)
        if slots:
            self._follow_slots(slots)

    def _follow_slots(self, slots):
        for _ in range(_SLOT_ROUNDS):
            if not self._forward_slots(dict(slots)):
                break

    def _edge_relations(self):
        """``[(register, other, constant)]``: the general registers at the end of the window that equal another
        there plus a constant."""
        first, found = {}, []
        for register in range(_GENERAL):
            root, offset = self.find((register, self.segment(register, self.n)))
            if root in first:
                other, other_offset = first[root]
                found.append((register, other, offset - other_offset))
            else:
                first[root] = (register, offset)
        return found

    def _outgoing(self, slots):
        """The slots live at the end of the window as ``(base register, offset, value register, offset)`` of the
        registers there: the address is the base's value plus its offset, the value the value register's plus its."""
        edge = {}
        for register in range(_GENERAL):
            root, offset = self.find((register, self.segment(register, self.n)))
            edge.setdefault(root, (register, offset))
        found = []
        for (root, offset), (segment, plus) in slots.items():
            base, value = edge.get(root), edge.get(self.find(segment)[0])
            if base is not None and value is not None:
                found.append((base[0], offset - base[1], value[0], self.find(segment)[1] + plus - value[1]))
        return found

    def _segments(self):
        """Each register's segments (``starts``: the first state of each) and the instructions that mention it."""
        starts = [[0] for _ in range(REGISTERS)]
        mentions = [[] for _ in range(REGISTERS)]
        for i, effect in enumerate(self.effects):
            if not self.active[i]:
                for register in range(REGISTERS):
                    starts[register].append(i + 1)
                continue
            for register in effect.writes:
                starts[register].append(i + 1)
            for register in effect.mentioned:
                mentions[register].append(i)
        self.starts, self.mentions = starts, mentions

    def _zero_results(self):
        """The flag-setting instructions whose result the trace says was zero: a je taken or a jne not taken."""
        self.zero = set()
        for i, effect in enumerate(self.effects):
            if not self.active[i] or effect.mnemonic not in ("je", "jne") or self.nexts[i] is None:
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
        if writer < 0 or not self.active[writer]:
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
                for output, source, constant in effect.related:
                    a = (output, self.segment(output, i + 1))
                    b = (source, self.segment(source, i))
                    self._union(a, b, constant)
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
                self._union((a, self.segment(a, i)), (b, self.segment(b, i)), 0)

    def _forward_slots(self, slots, relate=True):
        """One pass over the window relating each 64-bit load of a general register to the register stored at the
        same slot since (see the module doc), from ``slots`` ((root, offset) -> (segment, constant): the slot
        holds that segment's value plus the constant); True when it related anything new (classes merged:
        another pass may match more slots).  ``relate`` False: only the slots live at the end, returned."""
        related = False
        for i, effect in enumerate(self.effects):
            if not self.active[i] or effect.barrier or effect.kind in ("opaque", "syscall"):
                slots.clear()  # it may write anything, or nothing carries across it
                continue
            moved = self._slot_move(i, effect)
            if relate and moved is not None and moved[0] == "r" and moved[1] in slots:
                stored, constant = slots[moved[1]]
                if self.find(stored)[0] != self.find(moved[2])[0]:
                    self._union(moved[2], stored, constant)
                    related = True
            for kind, ref, size in effect.accesses:
                if kind == "w":
                    written = self._slot(i, ref)
                    slots = {} if written is None else {
                        key: stored for key, stored in slots.items()
                        if key[0] == written[0] and (key[1] + 8 <= written[1] or written[1] + size <= key[1])
                    }  # fmt: skip
            if moved is not None and moved[0] == "w":
                slots[moved[1]] = (moved[2], 0)
        return slots if not relate else related

    def _slot_move(self, i, effect):
        """``("w"|"r", slot, register segment)`` of a whole general register pushed or stored (read: popped or
        loaded) at a slot whose class is known, else None."""
        kind, ops = effect.kind, effect.operands
        if kind == "push" and ops[0].kind == "reg" and ops[0].width == 64 and ops[0].reg[0] < _GENERAL:
            slot, register, state = self._slot(i, effect.accesses[-1][1]), ops[0].reg[0], i
        elif kind == "pop" and ops[0].reg[0] < _GENERAL:
            slot, register, state = self._slot(i, effect.accesses[0][1]), ops[0].reg[0], i + 1
        elif kind == "mov" and len(ops) == 2 and ops[0].width == ops[1].width == 64:
            if ops[0].kind == "mem" and ops[1].kind == "reg" and ops[1].reg[0] < _GENERAL:
                slot, register, state, kind = self._slot(i, ops[0].ref), ops[1].reg[0], i, "push"
            elif ops[0].kind == "reg" and ops[1].kind == "mem" and ops[0].reg[0] < _GENERAL:
                slot, register, state, kind = self._slot(i, ops[1].ref), ops[0].reg[0], i + 1, "pop"
            else:
                return None
        else:
            return None
        if slot is None:
            return None
        return ("w" if kind == "push" else "r", slot, (register, self.segment(register, state)))

    def _slot(self, i, ref):
        """``(class root, offset)`` of a memory reference at instruction i: its base register's class and offset
        plus the displacement; None when an index, a segment or an area of its own makes it unnamed."""
        if type(ref) is not MemRef or ref.base is None or ref.index is not None or ref.segment is not None:
            return None
        root, offset = self.find((ref.base, self.segment(ref.base, i)))
        return root, offset + ref.disp

    def find(self, segment):
        return self.root.get(segment, (segment, 0))

    def _union(self, a, b, constant):
        """a = b + constant."""
        (root_a, off_a), (root_b, off_b) = self.find(a), self.find(b)
        if root_a == root_b:
            return  # already related (a loop adds the same relation again, or a different one: ignored)
        # root_a = a - off_a = b + constant - off_a = root_b + off_b + constant - off_a
        shift = off_b + constant - off_a
        group_a = self.members.pop(root_a, [(root_a, 0)])
        group_b = self.members.setdefault(root_b, [(root_b, 0)])
        for segment, offset in group_a:
            self.root[segment] = (root_b, offset + shift)
            group_b.append((segment, offset + shift))

    def segment(self, register, state):
        return bisect_right(self.starts[register], state) - 1
