"""The vector instructions the recovery computes: plain copies and zeroings of vector registers, lane by lane.

Values travel through vector registers in copies (memcpy's loads and stores
of xmm, ymm and zmm, spills, ``movq rax, xmm0``) and zeroed structures
(``pxor xmm0, xmm0`` then stores).  Those become kind "lanes": pairs of
(destination, source) operands of at most 128 bits, one per lane, each
computed like a mov both ways (rules.py), and the lanes they set to zero
(``Effect.zeroed``).  A W-bit memory operand is W/128 accesses 16 bytes
apart.  What the upper lanes hold afterwards is the architecture's rule: a
legacy SSE write of xmm keeps them, a VEX or EVEX write of xmm or ymm zeroes
everything above it, ``vzeroupper`` zeroes lanes 1..3 of registers 0..15
(16..31 are kept).  A narrower source (``movq``/``movd``, the scalar
``movsd``/``movss``) reads its low bits; a lane written from fewer bits is
zero-extended, which is what these instructions do to the low 128 bits.
Masked, broadcast or rounding forms are not plain copies: opaque.
"""

from capstone import x86

from .effects import Address32, MemRef, Operand
from .registers import LANES, SLICES, VECTOR, lanes, vector_number

_COPIES = frozenset(("movaps", "movups", "movapd", "movupd", "movdqa", "movdqu", "lddqu", "vmovaps", "vmovups",
                     "vmovapd", "vmovupd", "vmovdqa", "vmovdqu", "vmovdqa32", "vmovdqa64", "vmovdqu8", "vmovdqu16",
                     "vmovdqu32", "vmovdqu64"))  # fmt: skip
_NARROW = {"movq": 64, "vmovq": 64, "movd": 32, "vmovd": 32, "movsd": 64, "vmovsd": 64, "movss": 32, "vmovss": 32}
_SCALARS = frozenset(("movsd", "vmovsd", "movss", "vmovss"))  # copies only to or from memory (else they merge)
_ZEROING = frozenset(("pxor", "xorps", "xorpd", "vpxor", "vxorps", "vxorpd", "vpxord", "vpxorq"))
_LANE = 128


def vectors_named(insn):
    """Every lane of the vector registers an instruction names, explicitly or in capstone's lists."""
    listed_reads, listed_writes = insn.regs_access()
    explicit = [operand.reg for operand in insn.operands if operand.type == x86.X86_OP_REG]
    numbers = {vector_number(insn.reg_name(number) or "") for number in (*explicit, *listed_reads, *listed_writes)}
    return {lane for number in numbers - {None} for lane in lanes(number)}


def zero_upper(effect):
    """``vzeroupper``: lanes 1..3 of zmm0..zmm15 are 0 (zmm16..zmm31 are kept)."""
    effect.kind, effect.operands, effect.accesses = "lanes", (), ()
    effect.zeroed = tuple(lane for n in range(16) for lane in lanes(VECTOR + n, LANES - 1, first=1))
    effect.reads, effect.writes = frozenset(), frozenset(effect.zeroed)


def vector_copy(effect, insn):
    """Makes ``effect`` a kind "lanes" when it is a copy or a zeroing kept exactly (see the module doc); False when
    it is not."""
    mnemonic = effect.mnemonic
    if "{" in insn.op_str:  # a mask, a broadcast, a rounding mode
        return False
    if mnemonic in _ZEROING:
        return _zeroing(effect, insn)
    if any(type(operand.ref) is Address32 for operand in effect.operands if operand.kind == "mem"):
        return False  # its lanes would be addressed in 64 bits: computed nothing, as other vector instructions
    if len(insn.operands) != 2 or (mnemonic not in _COPIES and mnemonic not in _NARROW):
        return False
    destination, source = (_operand(insn, *pair) for pair in zip(insn.operands, effect.operands, strict=True))
    if destination is None or source is None or (mnemonic in _SCALARS and "mem" not in (destination[0], source[0])):
        return False
    width = _NARROW.get(mnemonic, destination[2])
    if width not in (32, 64) and (width % _LANE or width > _LANE * LANES):
        return False
    pairs, accesses, reads, writes = [], [], set(), set()
    for lane in range(max(1, width // _LANE)):
        part = min(width, _LANE)
        target = _part(destination, lane, part, "w", accesses, reads)
        origin = _part(source, lane, part, "r", accesses, reads)
        if target.kind == "reg":
            writes.add(target.reg[0])
        if origin.kind == "reg":
            reads.add(origin.reg[0])
        pairs += [target, origin]
    zeroed = ()
    if destination[0] == "vector" and mnemonic.startswith("v"):  # VEX and EVEX zero every lane above the copy
        filled = max(1, width // _LANE)
        zeroed = lanes(destination[1], LANES - filled, first=filled)
    effect.kind, effect.operands, effect.accesses, effect.zeroed = "lanes", tuple(pairs), tuple(accesses), zeroed
    effect.reads, effect.writes = frozenset(reads), frozenset(writes | set(zeroed))
    return True


def _operand(insn, operand, decoded):
    """``("vector", lane 0, bits)``, ``("gpr", slice, bits)`` or ``("mem", MemRef, bits)`` (``decoded``: the
    operand as semantics.decode saw it); None: not kept (mm, k, a vector index)."""
    width = operand.size * 8
    if operand.type == x86.X86_OP_REG:
        name = insn.reg_name(operand.reg) or ""
        number = vector_number(name)
        if number is not None:
            return ("vector", number, width)
        piece = SLICES.get(name)
        return None if piece is None else ("gpr", piece, width)
    if decoded.kind == "mem" and decoded.ref is not None:
        return ("mem", decoded.ref, width)
    return None


def _part(operand, lane, bits, kind, accesses, reads):
    """Lane ``lane`` of ``operand`` as an Operand of ``bits`` bits; a memory part adds its access."""
    what, value, _ = operand
    if what == "vector":
        return Operand("reg", reg=(value + 32 * lane, 0, bits), width=bits)
    if what == "gpr":
        return Operand("reg", reg=(value[0], value[1], bits), width=bits)
    ref = MemRef(value.base, value.index, value.scale, value.disp + 16 * lane, value.segment)
    reads.update(register for register in (ref.base, ref.index, ref.segment) if register is not None)
    accesses.append((kind, ref, bits // 8))
    index = len(accesses) - 1
    return Operand("mem", load=index if kind == "r" else -1, store=index if kind == "w" else -1, width=bits, ref=ref)


def _zeroing(effect, insn):
    """``pxor x, x`` / ``vpxor x, y, y``: the destination is 0 whatever the sources held (all of it for VEX and
    EVEX, lane 0 for legacy SSE)."""
    names = [insn.reg_name(operand.reg) for operand in insn.operands if operand.type == x86.X86_OP_REG]
    if len(names) != len(insn.operands) or len(set(names[-2:])) != 1 or vector_number(names[0]) is None:
        return False
    number = vector_number(names[0])
    effect.kind, effect.accesses, effect.operands = "lanes", (), ()
    effect.zeroed = lanes(number) if effect.mnemonic.startswith("v") else (number,)
    effect.reads, effect.writes = frozenset(), frozenset(effect.zeroed)
    return True
