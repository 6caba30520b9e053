"""Registers stored to a stack slot and loaded back from it: the same value, known before any address is.

A general register pushed or stored whole (``push rbx``, ``mov [rbp-8], rdi``) and popped or loaded whole from
the same slot later (``pop rbx``, ``mov rdi, [rbp-8]``, the ``pop rbp`` inside ``leave``), with no write between
that may touch the slot, is one value: a relation of the window's Structure, like ``mov rbp, rsp``.  A slot is
named by its base register's class (structure.py: segments that differ by constants) and offset, so equal names
are one address and different offsets in one class are different bytes, whatever the class's value.  A write at
an address of another class, or of no class, may hit any slot: it ends them all.  The slots live at a window's
end carry into the next window (``outgoing``), so a callee cut in two by the window edge still restores what it
saved.
"""

from .effects import MemRef
from .registers import RBP

_GENERAL = 16  # rax..r15: the registers whose slots are followed
_ROUNDS = 4  # passes over a window: each may merge classes that let the next match more slots
_WORD = 8
_CLEAR = "clear"


def plan(structure):
    """The instructions that matter to slots, once per window: ``(CLEAR, None)`` for one that may write anything
    (or where nothing carries), else ``(move, writes)``: the whole-register store or load, and the writes."""
    steps = []
    for i, effect in enumerate(structure.effects):
        if (
            not structure.active[i]
            or effect.barrier
            or effect.kind in ("opaque", "syscall", "sigreturn")
            or i in structure.deliveries
        ):
            steps.append((_CLEAR, None))
            continue
        if not effect.accesses:
            continue  # no memory touched: nothing to a slot
        move = _move(structure, i, effect)
        writes = [(*_named(structure, i, ref), size) for kind, ref, size in effect.accesses if kind == "w"]
        if move is not None or writes:
            steps.append((move, writes))
    return steps


def follow(structure, steps, slots):
    """Relate what the slots say, pass after pass while a pass relates something new; the slots live at the end."""
    for _ in range(_ROUNDS):
        related, live = _forward(structure, steps, {root: dict(held) for root, held in slots.items()}, True)
        if not related:
            return live
    return _forward(structure, steps, {root: dict(held) for root, held in slots.items()}, False)[1]


def _forward(structure, steps, slots, relate):
    """One pass: ``(related anything, the slots at the end)``; ``slots``: root -> {offset: (segment, constant)},
    the slot holding that segment's value plus the constant."""
    related, find = False, structure.find
    for move, writes in steps:
        if move is _CLEAR:
            slots.clear()
            continue
        if move is not None and move[0] == "r":
            root, offset = _at(find, move[1], move[2])
            held = slots.get(root, {}).get(offset)
            if relate and held is not None and find(held[0])[0] != find(move[3])[0]:
                structure.union(move[3], held[0], held[1])
                related = True
        for base, disp, size in writes:
            if base is None:
                slots.clear()
                continue
            root, offset = _at(find, base, disp)
            kept = slots.get(root)
            slots.clear()
            if kept:
                slots[root] = kept
                for dead in [o for o in kept if o < offset + size and offset < o + _WORD]:
                    del kept[dead]
        if move is not None and move[0] == "w":
            root, offset = _at(find, move[1], move[2])
            slots.setdefault(root, {})[offset] = (move[3], 0)
    return related, slots


def _at(find, base, disp):
    root, offset = find(base)
    return root, offset + disp


def _move(structure, i, effect):
    """``("w"|"r", base segment, displacement, register segment)`` of a whole general register pushed or stored
    (read: popped or loaded) at a named slot, else None."""
    kind, ops = effect.kind, effect.operands
    if kind == "push" and ops[0].kind == "reg" and ops[0].width == 64 and ops[0].reg[0] < _GENERAL:
        ref, register, state, way = effect.accesses[-1][1], ops[0].reg[0], i, "w"
    elif kind == "pop" and ops[0].reg[0] < _GENERAL:
        ref, register, state, way = effect.accesses[0][1], ops[0].reg[0], i + 1, "r"
    elif kind == "leave":  # mov rsp, rbp; pop rbp: rbp loaded whole from the slot rbp names
        ref, register, state, way = effect.accesses[0][1], RBP, i + 1, "r"
    elif kind == "mov" and len(ops) == 2 and ops[0].width == ops[1].width == 64:
        if ops[0].kind == "mem" and ops[1].kind == "reg" and ops[1].reg[0] < _GENERAL:
            ref, register, state, way = ops[0].ref, ops[1].reg[0], i, "w"
        elif ops[0].kind == "reg" and ops[1].kind == "mem" and ops[0].reg[0] < _GENERAL:
            ref, register, state, way = ops[1].ref, ops[0].reg[0], i + 1, "r"
        else:
            return None
    else:
        return None
    base, disp = _named(structure, i, ref)
    if base is None:
        return None
    return way, base, disp, (register, structure.segment(register, state))


def _named(structure, i, ref):
    """``(base register's segment, displacement)`` of a memory reference, or ``(None, 0)`` when an index, a segment
    or an area of its own leaves it without a name."""
    if type(ref) is not MemRef or ref.base is None or ref.index is not None or ref.segment is not None:
        return None, 0
    return (ref.base, structure.segment(ref.base, i)), ref.disp


def outgoing(structure, slots):
    """The general registers at the end of the window that equal another there plus a constant, and the slots
    live there as ``(base register, offset, value register, offset)`` of those registers."""
    edge, relations = {}, []
    for register in range(_GENERAL):
        root, offset = structure.find((register, structure.segment(register, structure.n)))
        if root in edge:
            other, other_offset = edge[root]
            relations.append((register, other, offset - other_offset))
        else:
            edge[root] = (register, offset)
    stored = []
    for root, held in slots.items():
        for offset, (segment, plus) in held.items():
            value_root, value_offset = structure.find(segment)
            base, value = edge.get(root), edge.get(value_root)
            if base is not None and value is not None:
                stored.append((base[0], offset - base[1], value[0], value_offset + plus - value[1]))
    return relations, stored


def incoming(structure, carried):
    """What the window before left (its ``outgoing``): its edge relations joined here, and the slots to start from."""
    relations, stored = carried
    for register, other, constant in relations:
        structure.union((register, structure.segment(register, 0)), (other, structure.segment(other, 0)), constant)
    slots = {}
    for base, at, register, offset in stored:
        root, shift = structure.find((base, structure.segment(base, 0)))
        slots.setdefault(root, {})[shift + at] = ((register, structure.segment(register, 0)), offset)
    return slots
