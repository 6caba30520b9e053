"""The commonest generic integer instructions computed here rather than in unicorn: shifts and rotates by a constant
or by cl, and the two- and three-operand imul.

Unicorn runs an instruction twice (emulator.py) for about half a millisecond; an -O0 loop's hashing spends a
quarter of a window's solving there.  These are the same results, for the destination only: their flags are
partly undefined (AF, OF after a multi-bit shift, SF/ZF/PF after imul), so, as for the emulator, rflags is
not computed.  A shift whose masked count is 0 changes nothing but may still zero-extend a 32-bit destination:
it is left to unicorn.
"""

from .registers import RCX
from .rules import write_operand
from .semantics import operand_value

_SHIFTS = frozenset(("shl", "sal", "shr", "sar", "rol", "ror"))


def compute(effect, get, loads):
    """``(registers, stores)`` as emulator.run gives them, or None when this module does not compute the
    instruction (then unicorn does); ``loads``: {access index: value}."""
    mnemonic, operands = effect.mnemonic, effect.operands
    if mnemonic in _SHIFTS and 1 <= len(operands) <= 2:
        return _shift(mnemonic, operands, get, loads.get)
    if mnemonic == "imul" and len(operands) in (2, 3):
        return _multiply(operands, get, loads.get)
    return None


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
    if count == 0 or width not in (8, 16, 32, 64):
        return None
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
