"""An instruction decoded for the recovery, and the arithmetic its rules share.

Each instruction address is decoded once (capstone, detail mode) into an
Effect (effects.py): the registers it may write (their values end there), the
registers it reads, its memory accesses (explicit operands and the stack slots
of push, pop, call, ret, leave), whether it may write memory nobody can name
(a *barrier*), and a *kind* that says which rules know it (classify.py):
the fast paths have exact rules both ways (rules.py), "generic" integer
instructions run forward in unicorn (emulator.py), "opaque" ones compute
nothing.  ``alu`` and the helpers below are the CPU's arithmetic as the fast
paths compute it.

No lldb here; capstone only.
"""

from dataclasses import replace

import capstone
from capstone import x86

from .classify import DIRECTION_WRITERS, REPEATS, classify
from .effects import Address32, Effect, MemRef, Operand
from .registers import DF, FS_BASE, GS_BASE, MASK64, RFLAGS, RIP, SEGMENTS, SLICES, all_lanes, read_slice

STATUS_FLAGS = 0x8D5  # CF PF AF ZF SF OF
_SEGMENT_BASES = {"fs": FS_BASE, "gs": GS_BASE}  # loading the selector sets the base (to what, the GDT says)


def _reference(insn, operand):
    """The operand's address as a MemRef (an Address32 under an address-size prefix: ``[ebx + ecx*4]``,
    ``[eip + 16]``), or None where it is no one address (a gather's vector index)."""
    mem = operand.mem
    disp, wide = mem.disp, True
    base = index = None
    if mem.base:
        name = insn.reg_name(mem.base)
        if name in ("rip", "eip"):
            disp += insn.address + insn.size
            wide = name == "rip"
        elif name not in SLICES:
            return None
        else:
            base, _, width = SLICES[name]
            wide = width == 64
    if mem.index:
        number, _, width = SLICES.get(insn.reg_name(mem.index), (None, 0, 0))
        if number is None:  # a gather's or scatter's vector index: no one address
            return None
        index, wide = number, wide and width == 64
    segment = _SEGMENT_BASES.get(insn.reg_name(mem.segment)) if mem.segment else None
    return (MemRef if wide else Address32)(base, index, mem.scale, disp, segment)


def decode(address, code, cs):
    """The Effect of the instruction at ``address`` (``code``: its bytes); None when it does not decode."""
    insn = next(cs.disasm(code, address, 1), None)
    if insn is None:
        return None
    *prefixes, mnemonic = insn.mnemonic.split()  # "rep movsb", "lock cmpxchg", "bnd jmp", "notrack jmp"
    operands, accesses, reads, writes = [], [], set(), set()
    untracked = False
    for operand in insn.operands:
        width = operand.size * 8
        if operand.type == x86.X86_OP_REG:
            name = insn.reg_name(operand.reg)
            piece = SLICES.get(name)
            if piece is None:
                untracked |= name not in SEGMENTS
                if operand.access & capstone.CS_AC_WRITE and name in _SEGMENT_BASES:  # mov fs, ax: a new base
                    writes.add(_SEGMENT_BASES[name])
                operands.append(Operand("untracked", width=width))
                continue
            reads.add(piece[0])  # a partial write keeps the rest: the old value is an input too
            # capstone 5 gives bswap r16 (whose result is undefined) no access; shld's count and source none either
            if operand.access & capstone.CS_AC_WRITE or (mnemonic == "bswap" and not operand.access):
                writes.add(piece[0])
            operands.append(Operand("reg", reg=piece, width=width))
        elif operand.type == x86.X86_OP_IMM:
            operands.append(Operand("imm", imm=operand.imm & MASK64, width=width))
        elif operand.type == x86.X86_OP_MEM:
            ref = _reference(insn, operand)
            if ref is not None and mnemonic == "lea":  # an effective address: no segment base is added
                ref = replace(ref, segment=None)
            if ref is None:
                untracked = True
            else:
                reads.update(r for r in (ref.base, ref.index, ref.segment) if r is not None)
            load = store = -1
            if mnemonic not in ("lea", "nop") and not mnemonic.startswith("prefetch"):
                if operand.access & capstone.CS_AC_READ or not operand.access:
                    load = len(accesses)
                    accesses.append(("r", ref, operand.size))
                if operand.access & capstone.CS_AC_WRITE:
                    store = len(accesses)
                    accesses.append(("w", ref, operand.size))
            operands.append(Operand("mem", load=load, store=store, width=width, ref=ref))
    listed_reads, listed_writes = insn.regs_access()
    for number in listed_reads:
        name = insn.reg_name(number)
        if name in SLICES:
            reads.add(SLICES[name][0])
        elif name not in SEGMENTS:
            untracked = True
    for number in listed_writes:
        name = insn.reg_name(number)
        if name in SLICES:
            writes.add(SLICES[name][0])
    reads.discard(RIP)
    writes.discard(RIP)
    effect = Effect(address, insn.size, mnemonic, "opaque", tuple(operands), frozenset(reads), frozenset(writes))
    effect.accesses = tuple(accesses)
    effect.code = bytes(insn.bytes)
    classify(effect, insn, untracked, repeated=bool(set(prefixes) & REPEATS))
    if effect.kind != "lanes":  # a vector register written, as far as we know: all its lanes (registers.py)
        effect.writes = all_lanes(effect.writes)
    if mnemonic in DIRECTION_WRITERS:  # the only user-mode instructions that change the direction flag
        effect.writes |= {DF}
    effect.mentioned = tuple(sorted(effect.reads | effect.writes))
    effect.seed = (
        effect.kind in ("call", "ret", "jmp", "syscall")
        or effect.reads <= {RFLAGS}
        or any(
            operand.kind == "imm" or (operand.kind == "mem" and operand.ref is not None and _absolute(operand.ref))
            for operand in effect.operands
        )
    )
    return effect


def _absolute(ref):
    return ref.base is None and ref.index is None


def operand_value(operand, get, load):
    """The value an operand reads (``get(register)``, ``load(access)`` -> int or None)."""
    if operand.kind == "imm":
        return operand.imm & ((1 << operand.width) - 1)
    if operand.kind == "reg":
        full = get(operand.reg[0])
        return None if full is None else read_slice(full, operand.reg[1], operand.reg[2])
    return load(operand.load)


def parity(value):
    return 0 if bin(value & 0xFF).count("1") & 1 else 0x4


def alu(op, a, b, width):
    """``(result, status flags)`` of an ALU operation on ``width``-bit values, as the CPU computes them."""
    mask, sign = (1 << width) - 1, 1 << (width - 1)
    if op in ("add", "inc"):
        result = (a + b) & mask
        carry, overflow = a + b > mask, (a ^ result) & (b ^ result) & sign
    elif op in ("sub", "cmp", "dec", "neg"):
        result = (a - b) & mask
        carry, overflow = a < b, (a ^ b) & (a ^ result) & sign
    else:
        result = {"and": a & b, "test": a & b, "or": a | b, "xor": a ^ b}[op]
        carry = overflow = 0
    flags = (1 if carry else 0) | parity(result) | (0x40 if result == 0 else 0) | (0x80 if result & sign else 0)
    flags |= 0x800 if overflow else 0
    if op not in ("and", "or", "xor", "test"):
        flags |= (a ^ b ^ result) & 0x10
    return result, flags


def new_flags(old, flags, written=STATUS_FLAGS):
    return None if old is None else (old & ~written) | (flags & written)


__all__ = ["Effect", "MemRef", "Operand", "alu", "decode", "new_flags", "operand_value"]
