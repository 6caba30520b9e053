"""The fast paths' exact rules: an instruction's outputs from its inputs, and its inputs from its outputs.

``forward`` and ``backward`` take the state before and after the instruction
as ``get(register) -> int | None`` and its memory accesses as ``load(access)``
(the value it read) and ``stored(access)`` (the value it wrote), little-endian
integers, None where unknown.  ``next_address`` is where the trace went next
(None: unknown); it is what an indirect branch read.  Only rules that hold
for every value are here: a partial register reveals nothing about the rest.
"""

from .effects import MemRef
from .registers import MASK64, RAX, RBP, RFLAGS, RSP, VECTOR, read_slice, sign_extend, write_slice
from .semantics import alu, new_flags, operand_value

_INC_DEC_FLAGS = 0x8D4  # inc and dec leave CF alone
_INVERSES = {"add": lambda r, b: r - b, "sub": lambda r, b: r + b, "xor": lambda r, b: r ^ b}


def write_operand(operand, get, value, regs, stores):
    """Record ``value`` written to a register or memory operand."""
    if value is None:
        return
    if operand.kind == "reg":
        number, shift, width = operand.reg
        full = write_slice(get(number) if width < 32 else None, shift, width, value)
        if full is not None:
            regs[number] = full
    elif operand.kind == "mem" and operand.store >= 0:
        stores[operand.store] = value & ((1 << operand.width) - 1)


def forward(effect, get, load):
    """``(registers after, stores)`` that the known inputs determine: {register: value}, {access: value}."""
    regs, stores = {}, {}
    kind, ops = effect.kind, effect.operands
    if kind == "mov":
        write_operand(ops[0], get, operand_value(ops[1], get, load), regs, stores)
    elif kind == "movx":
        value = operand_value(ops[1], get, load)
        if value is not None and effect.signed:
            value = sign_extend(value, ops[1].width) & ((1 << ops[0].width) - 1)
        write_operand(ops[0], get, value, regs, stores)
    elif kind == "lea":
        write_operand(ops[0], get, ops[1].ref.address(get), regs, stores)
    elif kind == "alu":
        _alu_forward(effect, get, load, regs, stores)
    elif kind == "unary":
        _unary_forward(effect, get, load, regs, stores)
    elif kind == "push":
        rsp, value = get(RSP), operand_value(ops[0], get, load)
        if ops[0].kind == "reg" and ops[0].reg[0] == RFLAGS:  # pushf: a single-stepping recorder's TF is in the
            value = None  # word pushed, not in the flags ptrace reports, nor in the word a normal run pushes
        if rsp is not None:
            regs[RSP] = (rsp - 8) & MASK64
        if value is not None:
            stores[len(effect.accesses) - 1] = value & MASK64
    elif kind == "pop":
        rsp = get(RSP)
        if rsp is not None:
            regs[RSP] = (rsp + 8) & MASK64
        if ops[0].reg[0] != RFLAGS and load(0) is not None:  # popf cannot set every flag: its result is not the load
            regs[ops[0].reg[0]] = load(0)
    elif kind == "call":
        rsp = get(RSP)
        if rsp is not None:
            regs[RSP] = (rsp - 8) & MASK64
        stores[len(effect.accesses) - 1] = effect.next_address
    elif kind == "ret":
        rsp = get(RSP)
        if rsp is not None:
            regs[RSP] = (rsp + 8 + effect.extra) & MASK64
    elif kind == "leave":
        rbp = get(RBP)
        if rbp is not None:
            regs[RSP] = (rbp + 8) & MASK64
        if load(0) is not None:
            regs[RBP] = load(0)
    elif kind == "xchg":
        first, second = ops[0].reg[0], ops[1].reg[0]
        for target, source in ((first, second), (second, first)):
            if get(source) is not None:
                regs[target] = get(source)
    elif kind == "lanes":
        for destination, source in zip(ops[::2], ops[1::2], strict=True):
            write_operand(destination, get, operand_value(source, get, load), regs, stores)
        regs.update(dict.fromkeys(effect.zeroed, 0))
    elif kind == "syscall":
        regs[2] = effect.next_address  # rcx: where sysret returns
    elif kind == "sigreturn":  # signals.py: each register from its slot
        for operand in ops:
            if load(operand.load) is not None:
                regs[operand.reg[0]] = load(operand.load)
    return regs, stores


def stored_pattern(effect, get, size):
    """What a stos wrote over the ``size`` bytes of its area (one it wrote whole: MemoryLayout.spans_exactly)
    where rax is known: rax's low element repeated.  None elsewhere, and for a movs, whose bytes are its
    source's."""
    if not effect.mnemonic.startswith("stos") or get(RAX) is None:
        return None
    element = effect.accesses[0][1].element
    pattern = (get(RAX) & ((1 << 8 * element) - 1)).to_bytes(element, "little")
    return int.from_bytes(pattern * (size // element), "little")


def zero_idiom(effect):
    """``xor r, r`` / ``sub r, r``: 0 whatever r held (not an instruction that merely reads no register, such as
    ``cmp byte [rip + x], 0``)."""
    destination, source = effect.operands
    return (
        effect.mnemonic in ("xor", "sub") and destination.kind == source.kind == "reg" and destination.reg == source.reg
    )


def _alu_forward(effect, get, load, regs, stores):
    destination, source = effect.operands
    op = effect.mnemonic
    if zero_idiom(effect):
        a = b = 0
    else:
        a, b = operand_value(destination, get, load), operand_value(source, get, load)
    if a is None or b is None:
        return
    width = destination.width
    result, flags = alu(op, a, b & ((1 << width) - 1), width)
    if op not in ("cmp", "test"):
        write_operand(destination, get, result, regs, stores)
    flags = new_flags(get(RFLAGS), flags)
    if flags is not None:
        regs[RFLAGS] = flags


def _unary_forward(effect, get, load, regs, stores):
    (operand,) = effect.operands
    a, op, width = operand_value(operand, get, load), effect.mnemonic, operand.width
    if a is None:
        return
    if op == "not":
        write_operand(operand, get, ~a & ((1 << width) - 1), regs, stores)
        return
    result, flags = alu({"inc": "add", "dec": "sub"}.get(op, "neg"), *((0, a) if op == "neg" else (a, 1)), width)
    write_operand(operand, get, result, regs, stores)
    flags = new_flags(get(RFLAGS), flags, _INC_DEC_FLAGS if op != "neg" else 0x8D5)
    if flags is not None:
        regs[RFLAGS] = flags


def backward(effect, before, after, memory, next_address, wide):
    """``(registers before, loads)``: what the outputs and the known inputs reveal about the inputs.  ``memory``:
    ``(loaded(access), stored(access))``; ``wide(register)``: whether its value before is 32 bits zero-extended."""
    regs, loads = {}, {}
    stored = memory[1]
    kind, ops = effect.kind, effect.operands
    if kind in ("mov", "movx"):
        _copy_backward(effect.kind, *ops, after, stored, wide, regs, loads)
    elif kind == "lanes":
        for destination, source in zip(ops[::2], ops[1::2], strict=True):
            _copy_backward("mov", destination, source, after, stored, wide, regs, loads)
    elif kind == "lea":
        _lea_backward(effect, before, after, wide, regs)
    elif kind == "alu":
        _alu_backward(effect, before, after, memory, wide, regs, loads)
    elif kind == "unary":
        _unary_backward(effect, after, stored, wide, regs, loads)
    elif kind in ("push", "call"):
        rsp = after(RSP)
        if rsp is not None:
            regs[RSP] = (rsp + 8) & MASK64
        if kind == "push":
            value = stored(len(effect.accesses) - 1)
            if value is not None and ops[0].kind == "reg" and ops[0].reg[0] not in (RSP, RFLAGS):
                regs[ops[0].reg[0]] = value
            elif value is not None and ops[0].kind == "mem":
                loads[ops[0].load] = value
        elif next_address is not None:
            _branch_operand(ops[0], next_address, regs, loads)
    elif kind == "jmp" and next_address is not None:
        _branch_operand(ops[0], next_address, regs, loads)
    elif kind == "pop":
        rsp = after(RSP)
        if rsp is not None:
            regs[RSP] = (rsp - 8) & MASK64
        if ops[0].reg[0] != RFLAGS and after(ops[0].reg[0]) is not None:
            loads[0] = after(ops[0].reg[0])
    elif kind == "ret":
        rsp = after(RSP)
        if rsp is not None:
            regs[RSP] = (rsp - 8 - effect.extra) & MASK64
        if next_address is not None:
            loads[0] = next_address
    elif kind == "sigreturn":
        for operand in ops:
            if after(operand.reg[0]) is not None:
                loads[operand.load] = after(operand.reg[0])
    elif kind == "leave":
        rsp, rbp = after(RSP), after(RBP)
        if rsp is not None:
            regs[RBP] = (rsp - 8) & MASK64
        if rbp is not None:
            loads[0] = rbp
    elif kind == "xchg":
        first, second = ops[0].reg[0], ops[1].reg[0]
        for target, source in ((first, second), (second, first)):
            if after(source) is not None:
                regs[target] = after(source)
    return regs, loads


def _branch_operand(operand, next_address, regs, loads):
    """An indirect jmp/call read where the trace went next."""
    if operand.kind == "reg" and operand.reg[2] == 64:
        regs[operand.reg[0]] = next_address
    elif operand.kind == "mem" and operand.width == 64:
        loads[operand.load] = next_address


def _whole(operand, wide):
    """Whether a value of the operand's width is the whole register: 64 bits, or 32 zero-extended ones (a vector
    register's 128)."""
    number, shift, width = operand.reg
    if number >= VECTOR:
        return width == 128
    return shift == 0 and (width == 64 or (width == 32 and wide(number)))


def _reveal(operand, value, wide, regs, loads):
    """An input operand's value, learned: a register only where that value is all of it."""
    if value is None:
        return
    if operand.kind == "reg" and _whole(operand, wide):
        regs[operand.reg[0]] = value
    elif operand.kind == "mem" and operand.load >= 0:
        loads[operand.load] = value


def _copy_backward(kind, destination, source, after, stored, wide, regs, loads):
    if destination.kind == "reg":
        full = after(destination.reg[0])
        if full is not None and source.kind in ("mem", "reg") and destination.width >= source.width:
            # the low bits of what it filled are what it read (zero- or sign-extended above)
            _reveal(source, read_slice(full, destination.reg[1], source.width), wide, regs, loads)
    elif destination.kind == "mem" and source.kind == "reg" and kind == "mov":
        value = stored(destination.store)
        if value is not None and source.reg[2] == destination.width:
            _reveal(source, value, wide, regs, loads)


def _lea_backward(effect, before, after, wide, regs):
    """The one unknown register of the address from the result (its low half only, for a 32-bit lea or address,
    which is all of it where that register was itself zero-extended)."""
    destination, source = effect.operands
    ref, value = source.ref, after(destination.reg[0])
    if value is None or destination.width < 32 or ref.segment is not None or ref.base == ref.index:
        return
    whole = destination.width == 64 and type(ref) is MemRef  # (not an Address32, computed in 32 bits)
    mask = MASK64 if whole else 0xFFFFFFFF

    def known(register):  # a register lea does not write is the same before and after
        return before(register) if register != destination.reg[0] else None

    base = known(ref.base) if ref.base is not None else 0
    index = known(ref.index) if ref.index is not None else 0
    if base is None and index is not None:
        unknown, found = ref.base, (value - index * ref.scale - ref.disp) & mask
    elif index is None and base is not None and ref.scale == 1:
        unknown, found = ref.index, (value - base - ref.disp) & mask
    else:
        return
    if whole or wide(unknown):
        regs[unknown] = found


def _alu_backward(effect, before, after, memory, wide, regs, loads):
    """add/sub/xor: either input from the result and the other input."""
    destination, source = effect.operands
    op, (loaded, stored) = effect.mnemonic, memory
    if op not in _INVERSES or zero_idiom(effect) or source.reg == destination.reg != None:  # noqa: E711
        return
    mask = (1 << destination.width) - 1
    result = _written(destination, after, stored)
    if result is None:
        return
    b = operand_value(source, before, loaded)
    if b is not None:
        _reveal(destination, _INVERSES[op](result, b & mask) & mask, wide, regs, loads)
    a = operand_value(destination, before, loaded)
    if a is not None and source.kind != "imm":
        b = {"add": result - a, "sub": a - result, "xor": result ^ a}[op] & mask
        _reveal(source, b, wide, regs, loads)


def _written(operand, after, stored):
    """The value an instruction left in its destination operand, where known: a register of 32 or 64 bits (a
    narrower one is merged with bits the rules do not follow), or the memory it stored to."""
    if operand.kind == "reg":
        return after(operand.reg[0]) if operand.width >= 32 else None
    return stored(operand.store)


def _unary_backward(effect, after, stored, wide, regs, loads):
    (operand,) = effect.operands
    width = operand.width
    result = _written(operand, after, stored)
    if result is None:
        return
    mask = (1 << width) - 1
    value = {"inc": result - 1, "dec": result + 1, "neg": -result, "not": ~result}[effect.mnemonic] & mask
    _reveal(operand, value, wide, regs, loads)


def relations(effect):
    """``[(register after, register before, constant)]``: the outputs that equal an input plus a constant, known or
    not, so that learning either one anywhere teaches the other (the stack and frame pointers mostly)."""
    kind, ops = effect.kind, effect.operands
    if kind in ("push", "call"):
        return [(RSP, RSP, -8)]
    if kind == "pop":
        return [(RSP, RSP, 8)] if ops[0].reg[0] != RSP else []
    if kind == "ret":
        return [(RSP, RSP, 8 + effect.extra)]
    if kind == "leave":
        return [(RSP, RBP, 8)]
    if kind == "xchg":
        return [(ops[0].reg[0], ops[1].reg[0], 0), (ops[1].reg[0], ops[0].reg[0], 0)]
    if not ops or ops[0].kind != "reg" or ops[0].width != 64:
        return []
    target = ops[0].reg[0]
    if kind == "mov" and ops[1].kind == "reg" and ops[1].width == 64 and ops[1].reg[0] != target:
        return [(target, ops[1].reg[0], 0)]
    if kind == "alu" and effect.mnemonic in ("add", "sub") and ops[1].kind == "imm":
        step = sign_extend(ops[1].imm, 64)
        return [(target, target, step if effect.mnemonic == "add" else -step)]
    if kind == "unary" and effect.mnemonic in ("inc", "dec"):
        return [(target, target, 1 if effect.mnemonic == "inc" else -1)]
    if kind == "lea":
        ref = ops[1].ref
        if type(ref) is MemRef and ref.base is not None and ref.index is None and ref.segment is None:
            return [(target, ref.base, ref.disp)]
    return []


def when_zero(effect, before, loaded, wide):
    """``(registers before, registers after, loads)`` that a zero result reveals: the trace took the branch of a
    je/jne that says this instruction set ZF.  ``loaded(access)``: the value a load read; ``wide`` as in backward."""
    regs, outputs, loads = {}, {}, {}
    op, (destination, *rest) = effect.mnemonic, effect.operands
    mask = (1 << destination.width) - 1
    if op not in ("cmp", "test") and destination.kind == "reg" and destination.width in (32, 64):
        outputs[destination.reg[0]] = 0  # a 32-bit result is zero-extended
    if op in ("inc", "dec", "neg"):
        _reveal(destination, {"inc": mask, "dec": 1, "neg": 0}[op], wide, regs, loads)
    elif op in ("test", "and") and rest[0].kind == "reg" and rest[0].reg == destination.reg:
        _reveal(destination, 0, wide, regs, loads)
    elif op == "or":
        _reveal(destination, 0, wide, regs, loads)
        _reveal(rest[0], 0, wide, regs, loads)
    elif op in ("cmp", "sub", "xor", "add"):  # destination == source (== -source for add)
        for target, other in ((destination, rest[0]), (rest[0], destination)):
            value = operand_value(other, before, loaded)
            if value is not None and target.kind != "imm":
                _reveal(target, (-value if op == "add" else value) & mask, wide, regs, loads)
    return regs, outputs, loads
