"""The commonest generic integer instructions computed here rather than in unicorn: shifts and rotates by a constant
or by cl, and the two- and three-operand imul; and the cases where unicorn's answer is not the CPU's.

Unicorn runs an instruction twice (emulator.py) for about half a millisecond; an -O0 loop's hashing spends a
quarter of a window's solving there.  These are the same results, for the destination only: their flags are
partly undefined (AF, OF after a multi-bit shift, SF/ZF/PF after imul), so, as for the emulator, rflags is
not computed.

Unicorn (QEMU) writes some destinations the CPU leaves alone, and zero-extends what it writes as 32 bits:
- ``cmpxchg`` with 32-bit operands that succeeds does not write the accumulator (rax keeps its upper half);
  one that fails loads the accumulator, and a register destination keeps its upper half on Intel (written
  back, the SDM says): so it is computed here, that destination unknown after a failure;
- ``bsf``/``bsr`` of 0 leave the destination undefined (Intel; unchanged on AMD): unknown;
- a shift or rotate whose masked count is 0 changes nothing, but whether a 32-bit destination is zero-extended
  then is the CPU's choice: known only where its upper half is 0 anyway;
- ``bswap`` of 16 bits, and ``shld``/``shrd`` of 16 bits by more than 16, are undefined: unknown;
- BMI's bit fields (``bzhi``, ``bextr``, ``pdep``, ``pext``): unicorn clears the top bit where an index reaches
  past the operand, reads a 32-bit ``bextr``'s source past bit 31 and leaves a 32-bit ``pdep``'s result
  uncut: computed here, as the SDM says (their flags are partly undefined, or unchanged).
"""

from .effects import Operand
from .registers import RAX, RCX, RFLAGS
from .rules import write_operand
from .semantics import alu, new_flags, operand_value

_SHIFTS = frozenset(("shl", "sal", "shr", "sar", "rol", "ror"))
_CARRY_ROTATES = frozenset(("rcl", "rcr"))
_DOUBLE_SHIFTS = frozenset(("shld", "shrd"))
_BIT_SCANS = frozenset(("bsf", "bsr"))
_BIT_FIELDS = frozenset(("bzhi", "bextr", "pdep", "pext"))


def compute(effect, get, loads):
    """``(registers, stores)`` as emulator.run gives them, or None when this module does not compute the
    instruction (then unicorn does); ``loads``: {access index: value}."""
    mnemonic, operands = effect.mnemonic, effect.operands
    if mnemonic in _SHIFTS and 1 <= len(operands) <= 2:
        return _shift(mnemonic, operands, get, loads.get)
    if mnemonic == "imul" and len(operands) in (2, 3):
        return _multiply(operands, get, loads.get)
    if mnemonic == "cmpxchg" and len(operands) == 2:
        return _compare_exchange(operands, get, loads.get)
    if mnemonic in _BIT_FIELDS and len(operands) == 3:
        return _bit_field(mnemonic, operands, get, loads.get)
    return _not_unicorns(mnemonic, operands, get, loads.get)


def _not_unicorns(mnemonic, operands, get, load):
    """``({}, {})`` (nothing known after it) where the CPU's result is undefined or its own and unicorn's may
    differ (see the module doc); None where unicorn's answer is the CPU's."""
    if not operands:
        return None
    destination = operands[0]
    if mnemonic in _BIT_SCANS and len(operands) == 2:
        return ({}, {}) if operand_value(operands[1], get, load) == 0 else None
    if mnemonic == "bswap":
        return ({}, {}) if destination.width == 16 else None
    if mnemonic in _DOUBLE_SHIFTS and len(operands) == 3:
        count = _count(operands[2], get)
        if count is not None and destination.width == 16 and count & 31 > 16:
            return {}, {}
    elif mnemonic in _CARRY_ROTATES and len(operands) in (1, 2):
        count = 1 if len(operands) == 1 else _count(operands[1], get)
    else:
        return None
    if count is not None and count & 31 == 0 and _upper_half_unsure(destination, get):
        return {}, {}
    return None


def _unchanged(destination, get, value):
    """An instruction that changed neither its destination nor the flags (a shift by 0), as far as that is sure."""
    if _upper_half_unsure(destination, get):
        return {}, {}
    regs, stores = {}, {}
    for register in (RFLAGS, destination.reg[0] if destination.kind == "reg" else None):
        if register is not None and get(register) is not None:
            regs[register] = get(register)
    if destination.kind == "mem" and value is not None:
        stores[destination.store] = value  # the same bytes
    return regs, stores


def _count(operand, get):
    """A shift count operand's value (an immediate or cl), or None."""
    if operand.kind == "imm":
        return operand.imm
    if operand.kind == "reg" and operand.reg == (RCX, 0, 8):
        value = get(RCX)
        return None if value is None else value & 0xFF
    return None


def _upper_half_unsure(destination, get):
    """Whether a 32-bit register destination left alone may or may not be zero-extended to a different value."""
    if destination.kind != "reg" or destination.width != 32:
        return False
    value = get(destination.reg[0])
    return value is None or value >> 32 != 0


def _compare_exchange(operands, get, load):
    """``cmpxchg DEST, SRC``: DEST = SRC where the accumulator equals DEST (the accumulator left whole), else the
    accumulator = DEST (a 32-bit one zero-extended) and DEST written back as it was (a 32-bit register's upper half
    as the CPU pleases: unknown)."""
    destination, source = operands
    width = destination.width
    accumulator, old = get(RAX), operand_value(destination, get, load)
    if accumulator is None or old is None or width not in (8, 16, 32, 64):
        return {}, {}
    mask = (1 << width) - 1
    _, flags = alu("cmp", accumulator & mask, old, width)
    regs, stores = {}, {}
    rflags = new_flags(get(RFLAGS), flags)
    if rflags is not None:
        regs[RFLAGS] = rflags

    def written(register):  # a register as this instruction's earlier write left it: two writes may share one
        return regs[register] if register in regs else get(register)

    if accumulator & mask == old:
        if not (destination.kind == "reg" and destination.reg[0] == RAX):  # else DEST's write says what rax holds
            regs[RAX] = accumulator
        write_operand(destination, written, operand_value(source, get, load), regs, stores)
    else:
        write_operand(_accumulator(width), get, old, regs, stores)
        if destination.kind == "mem" or width != 32:
            write_operand(destination, written, old, regs, stores)  # the same bytes again (ah's over al's)
    return regs, stores


def _accumulator(width):
    return Operand("reg", reg=(RAX, 0, width), width=width)


def _shift(mnemonic, operands, get, load):
    destination = operands[0]
    width = destination.width
    if len(operands) == 1:
        count = 1
    elif operands[1].kind == "imm":
        count = operands[1].imm
    elif operands[1].kind == "reg" and operands[1].reg == (RCX, 0, 8):
        count = get(RCX)
    else:
        return None
    if count is None or destination.kind not in ("reg", "mem"):
        return {}, {}
    count &= 63 if width == 64 else 31
    value = operand_value(destination, get, load)
    if width not in (8, 16, 32, 64):
        return None
    if count == 0:  # nothing changes, flags included; a 32-bit register's upper half is the CPU's choice
        return _unchanged(destination, get, value)
    if value is None:
        return {}, {}
    mask = (1 << width) - 1
    if mnemonic in ("shl", "sal"):
        result = value << count
    elif mnemonic == "shr":
        result = value >> count
    elif mnemonic == "sar":
        result = (value - (1 << width) if value >> (width - 1) else value) >> count
    else:
        turn = count % width if mnemonic == "rol" else (width - count % width) % width
        result = value << turn | value >> (width - turn)
    regs, stores = {}, {}
    write_operand(destination, get, result & mask, regs, stores)
    return regs, stores


def _bit_field(mnemonic, operands, get, load):
    """``bzhi``/``bextr DEST, SOURCE, CONTROL``: SOURCE with the bits from CONTROL's low byte up cleared, or the
    CONTROL[15:8] bits from bit CONTROL[7:0] on; ``pdep``/``pext DEST, SOURCE, MASK``: SOURCE's low bits
    deposited at MASK's set bits, or MASK's bits of SOURCE gathered low.  A 32-bit destination is zero-extended."""
    destination, source, control = operands
    width = destination.width
    value, other = operand_value(source, get, load), operand_value(control, get, load)
    if destination.kind != "reg" or width not in (32, 64):
        return None
    if value is None or other is None:
        return {}, {}
    if mnemonic == "bzhi":
        index = other & 0xFF
        result = value & ((1 << index) - 1) if index < width else value
    elif mnemonic == "bextr":
        start, length = other & 0xFF, other >> 8 & 0xFF
        result = value >> start & ((1 << length) - 1)
    else:
        result, k = 0, 0
        for bit in range(width):
            if other >> bit & 1:
                if mnemonic == "pdep":
                    result |= (value >> k & 1) << bit
                else:
                    result |= (value >> bit & 1) << k
                k += 1
    regs, stores = {}, {}
    write_operand(destination, get, result & ((1 << width) - 1), regs, stores)
    return regs, stores


def _multiply(operands, get, load):
    destination = operands[0]
    if destination.kind != "reg" or destination.width not in (16, 32, 64):
        return None
    first, second = (operands[0], operands[1]) if len(operands) == 2 else (operands[1], operands[2])
    a, b = operand_value(first, get, load), operand_value(second, get, load)
    if a is None or b is None:
        return {}, {}
    regs, stores = {}, {}
    write_operand(destination, get, (a * b) & ((1 << destination.width) - 1), regs, stores)  # the low half
    return regs, stores
