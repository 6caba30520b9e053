"""Which rules know an instruction: its Effect's kind, and what it may write when none computes it.

The fast paths (kinds mov, movx, lea, alu, unary, push, pop, call, ret,
leave, xchg, jmp, and the vector copies "lanes") have exact rules both ways
(rules.py); "generic" integer
instructions whose register lists capstone gives run forward in unicorn
(emulator.py); "opaque" ones compute nothing: what they may write becomes
unknown.  An opaque instruction is *vetted* when what it may write is known
(SSE/AVX/AVX-512 and x87 write a general register only as their destination,
memory only through their operands); an unvetted one may write every register
and all memory (a barrier).
"""

import re
from dataclasses import replace

import capstone
from capstone import x86

from .effects import (
    STATE_AREA_BOUND,
    STRING_AREA_BOUND,
    Address32,
    BitString,
    MemRef,
    Operand,
    StateArea,
    StringArea,
)
from .registers import DF, FS_BASE, GPRS, GS_BASE, RAX, RBP, RCX, RDI, RDX, RFLAGS, RSI, RSP, VECTOR, VECTORS
from .vector import vector_copy, vectors_named, zero_upper

_ALU = frozenset(("add", "sub", "and", "or", "xor", "cmp", "test"))
_UNARY = frozenset(("inc", "dec", "neg", "not"))
_NOPS = frozenset(("nop", "endbr64", "endbr32", "pause", "lfence", "mfence", "sfence", "prefetcht0", "prefetcht1"))
_NOPS |= {"prefetcht2", "prefetchnta", "prefetchw"}
# Integer instructions whose reads and writes capstone lists completely and that touch memory only through their
# operands: unicorn may compute them, and nothing else changes.
_VETTED = frozenset((
    "mov", "movabs", "movzx", "movsx", "movsxd", "xchg", "xadd", "cmpxchg", "bswap", "movbe", "cbw", "cwde",
    "cdqe", "cwd", "cdq", "cqo", "adc", "sbb", "imul", "mul", "div", "idiv", "shl", "shr", "sar", "sal", "rol",
    "ror", "rcl", "rcr", "bt", "bts", "btr", "btc", "lzcnt", "tzcnt", "popcnt", "andn", "blsr", "blsi", "blsmsk",
    "bzhi", "bextr", "pdep", "pext", "sarx", "shlx", "shrx", "rorx", "mulx", "adcx", "adox", "cld", "std", "clc",
    "stc", "cmc", "crc32", "lahf", "sahf", "bsf", "bsr", "shld", "shrd",
))  # fmt: skip
# Opaque but known: they write these registers (besides capstone's lists) and nothing in memory.
_OPAQUE_WRITES = {
    "cpuid": (0, 1, 2, 3), "rdtsc": (0, 3), "rdtscp": (0, 2, 3), "rdrand": (), "rdseed": (), "rdpid": (),
    "xgetbv": (0, 3), "rdpkru": (0, 3), "rdfsbase": (), "rdgsbase": (), "wrfsbase": (FS_BASE,),
    "wrgsbase": (GS_BASE,), "pcmpistri": (RCX, RFLAGS), "pcmpestri": (RCX, RFLAGS), "vpcmpistri": (RCX, RFLAGS),
    "vpcmpestri": (RCX, RFLAGS), "pcmpistrm": (VECTOR, RFLAGS), "pcmpestrm": (VECTOR, RFLAGS),
    "vpcmpistrm": (VECTOR, RFLAGS), "vpcmpestrm": (VECTOR, RFLAGS), "vzeroall": VECTORS[:16],
    "cmpxchg8b": (RAX, RDX, RFLAGS), "cmpxchg16b": (RAX, RDX, RFLAGS),
}  # fmt: skip
_COMPARE_EXCHANGES = frozenset(("cmpxchg8b", "cmpxchg16b"))  # their operand is read, and written when equal
_SYSCALL_WRITES = (RAX, RCX, 11, RFLAGS, FS_BASE, GS_BASE)  # arch_prctl sets fs_base; r11 gets rflags
_SYSCALL_READS = frozenset((RAX, RDI, RSI, RDX, 10, 8, 9))  # the number; the arguments in rdi, rsi, rdx, r10, r8, r9
_STATE_SAVES = frozenset(("xsave", "xsavec", "xsaveopt", "xsaves", "fxsave", "xsave64", "xsavec64", "fxsave64"))
_STATE_RESTORES = frozenset(("xrstor", "xrstors", "fxrstor", "xrstor64", "xrstors64", "fxrstor64"))
_UNTRACKED_TOUCH_MEMORY = _STATE_SAVES
_VECTOR_NAME = re.compile(r"[xyz]mm\d+|mm\d|k\d")
_VECTOR_FLAG_WRITERS = ("comis", "ucomis", "ptest", "testp", "kortest", "ktest")
_IMPLICIT_STORES = frozenset(("maskmovq", "maskmovdqu", "vmaskmovdqu"))  # they write at rdi
_KEY_LOCKER = ("encodekey", "aesencwide", "aesdecwide")
# x87 stores and the size they write when capstone gives none (0: unknown, a barrier).
_X87_STORES = {
    "fst": 0, "fstp": 0, "fist": 0, "fistp": 0, "fisttp": 0, "fbstp": 10, "fnstcw": 2, "fstcw": 2, "fnstsw": 2,
    "fstsw": 2, "fnstenv": 28, "fstenv": 28, "fnsave": 108, "fsave": 108,
}  # fmt: skip
_BIT_TESTS = frozenset(("bt", "bts", "btr", "btc"))
_PARTIAL_STORES = ("maskmov", "pmaskmov", "compress", "pcompress")  # stores of the elements a mask or count picks
# Stores capstone marks as reads of their operand, or sizes wrongly: the bytes each writes (0: its operand's).
# fnsave's 108 is its 32-bit layout's, and covers the 94 of the 16-bit one (an operand-size prefix).
_MISSED_STORES = {"stmxcsr": 4, "vstmxcsr": 4, "movnti": 0, "fnsave": 108}
_STRING_OPS = frozenset(
    getattr(x86, f"X86_INS_{op}{size}") for op in ("MOVS", "STOS", "LODS", "SCAS", "CMPS") for size in "BWDQ"
)
REPEATS = frozenset(("rep", "repe", "repne", "repz", "repnz"))
# Registers capstone 5 leaves out of some instructions' write lists.
_MISSED_WRITES = {
    "cmpxchg": frozenset((RAX, RFLAGS)), "xadd": frozenset((RFLAGS,)), "mul": frozenset((RAX, 3, RFLAGS)),
    "imul": frozenset((RFLAGS,)), "div": frozenset((RAX, 3, RFLAGS)), "idiv": frozenset((RAX, 3, RFLAGS)),
}  # fmt: skip
# The generic instructions whose every written flag is defined: the others' rflags are not computed.
FLAGS_DEFINED = frozenset(("adc", "sbb", "cmpxchg", "xadd", "cld", "std", "clc", "stc", "cmc"))
# What changes the direction flag in user mode (registers.DF); cld and std set it to these.
DIRECTION_WRITERS = frozenset(("cld", "std", "popf", "popfw", "popfd", "popfq", "iret", "iretd", "iretq"))
DIRECTION_SET = {"cld": 0, "std": 1}
_STACK_BRANCHES, _OPERAND_SIZE = frozenset(("call", "ret", "leave")), 0x66  # with the operand-size prefix: 16 bits
_CONDITIONS = ("o", "no", "b", "ae", "e", "ne", "be", "a", "s", "ns", "p", "np", "l", "ge", "le", "g")


def classify(effect, insn, untracked, repeated):
    """Sets ``effect``'s kind and adjusts its writes, accesses and barrier (see the module doc)."""
    mnemonic, operands = effect.mnemonic, effect.operands
    shape = tuple(operand.kind for operand in operands)
    rsp = frozenset((RSP,))
    if insn.id in _STRING_OPS and not _has_vector_register(insn):  # (SSE has a movsd and a cmpsd too)
        # rep or not: capstone lists the registers; movs/stos write an area rdi and rcx decide (StringArea)
        _opaque(effect, insn, vetted=True)
        effect.writes |= {RCX, RSI, RDI, RFLAGS} if repeated else {RFLAGS}
        if mnemonic.startswith(("movs", "stos")):
            _string_areas(effect, repeated)
    elif insn.id == x86.X86_INS_PUSHFQ or (insn.id == x86.X86_INS_PUSH and operands[0].width in (0, 64)):
        source = Operand("reg", reg=(RFLAGS, 0, 64)) if insn.id == x86.X86_INS_PUSHFQ else operands[0]
        slot = ("w", MemRef(RSP, None, 1, -8, None), 8)
        if source.kind == "mem":  # push [m]: its load first
            effect.accesses = (*effect.accesses, slot)
        else:
            effect.accesses = (slot,)
        effect.operands = (source,)
        effect.kind, effect.writes, effect.reads = "push", rsp, effect.reads | rsp | _reads_of(source)
    elif insn.id == x86.X86_INS_POPFQ or (insn.id == x86.X86_INS_POP and shape == ("reg",)):
        target = operands[0] if operands else Operand("reg", reg=(RFLAGS, 0, 64))
        if target.reg[0] == RSP or target.reg[2] != 64:
            effect.writes |= rsp | {target.reg[0]}
            effect.accesses = (("r", MemRef(RSP, None, 1, 0, None), 8),)
            return
        effect.operands = (target,)
        effect.accesses = (("r", MemRef(RSP, None, 1, 0, None), 8),)
        effect.kind, effect.writes, effect.reads = "pop", rsp | {target.reg[0]}, rsp
    elif mnemonic in _STACK_BRANCHES and insn.prefix[2] == _OPERAND_SIZE:
        _opaque(effect, insn, vetted=False)  # 16 bits: leave pops 2 bytes into bp; AMD's ret and call too
    elif capstone.CS_GRP_CALL in insn.groups and mnemonic == "call":
        effect.accesses = (*effect.accesses, ("w", MemRef(RSP, None, 1, -8, None), 8))
        effect.kind, effect.writes, effect.reads = "call", rsp, effect.reads | rsp
    elif mnemonic == "ret":
        effect.accesses = (("r", MemRef(RSP, None, 1, 0, None), 8),)
        effect.extra = operands[0].imm if operands else 0
        effect.kind, effect.writes, effect.reads = "ret", rsp, rsp
    elif mnemonic == "leave":
        effect.accesses = (("r", MemRef(RBP, None, 1, 0, None), 8),)
        effect.kind, effect.writes, effect.reads = "leave", frozenset((RSP, RBP)), frozenset((RBP,))
    elif mnemonic == "vzeroupper":
        zero_upper(effect)
    elif mnemonic in _NOPS or (mnemonic.startswith("j") and shape in (("imm",),)):
        effect.kind, effect.writes, effect.accesses = "nop", frozenset(), ()
    elif mnemonic == "jmp":
        effect.kind, effect.writes = "jmp", frozenset()
    elif mnemonic in ("syscall",):
        effect.kind, effect.writes, effect.barrier = "syscall", frozenset(_SYSCALL_WRITES), True
        effect.reads = effect.reads | _SYSCALL_READS  # its number and arguments say what memory it may write
    elif mnemonic in _STATE_SAVES or mnemonic in _STATE_RESTORES:  # x87/SSE/AVX state: no tracked register
        effect.kind, effect.writes = "opaque", frozenset()
        _state_area(effect)
    elif repeated:
        _opaque(effect, insn, vetted=False)  # a rep prefix on anything else: an oddity
    elif _has_vector_register(insn) and mnemonic not in _OPAQUE_WRITES:
        _vector(effect, insn)
    elif mnemonic[0] == "f" and insn.id != x86.X86_INS_INVALID:
        _x87(effect, insn)
    elif untracked or mnemonic[0] == "v" or insn.id in (x86.X86_INS_INVALID,):
        _opaque(effect, insn, vetted=_is_vector(insn))
    elif mnemonic in ("mov", "movabs") and len(operands) == 2:
        effect.kind = "mov"
    elif mnemonic in ("movzx", "movsx", "movsxd") and shape[0] == "reg":
        effect.kind, effect.signed = "movx", mnemonic != "movzx"
    elif mnemonic == "lea" and operands[0].kind == "reg":
        effect.kind, effect.accesses = "lea", ()
    elif mnemonic in _ALU and len(operands) == 2:
        effect.kind = "alu"
        same = shape == ("reg", "reg") and operands[0].reg == operands[1].reg
        if same and mnemonic in ("xor", "sub"):
            effect.reads = frozenset((RFLAGS,))  # the zero idiom: the result does not depend on the register
        effect.writes |= {RFLAGS}
        effect.reads |= {RFLAGS}
    elif mnemonic in _UNARY and len(operands) == 1:
        effect.kind = "unary"
        if mnemonic != "not":
            effect.writes |= {RFLAGS}
            effect.reads |= {RFLAGS}
    elif mnemonic == "xchg" and shape == ("reg", "reg") and operands[0].width == operands[1].width == 64:
        effect.kind = "xchg"
    elif mnemonic in _VETTED or _condition(mnemonic):
        effect.kind = "generic"
        effect.writes |= _MISSED_WRITES.get(mnemonic, frozenset())
        _destination_written(effect)
        if mnemonic in _BIT_TESTS and shape == ("mem", "reg") and type(operands[0].ref) is Address32:
            _opaque(effect, insn, vetted=False)  # the word it picks, in 32 bits: not followed
        elif mnemonic in _BIT_TESTS and shape == ("mem", "reg"):
            _bit_string(effect)
    else:
        _opaque(effect, insn, vetted=mnemonic in _OPAQUE_WRITES or _is_vector(insn))
    if effect.kind in ("alu", "unary", "generic") and not _register_or_memory(effect):
        _opaque(effect, insn, vetted=False)
    if mnemonic in _MISSED_STORES and operands and operands[0].kind == "mem" and operands[0].ref is not None:
        effect.accesses = (("w", operands[0].ref, _MISSED_STORES[mnemonic] or operands[0].width // 8),)
    if mnemonic in _COMPARE_EXCHANGES and len(effect.accesses) == 1 and effect.accesses[0][1] is not None:
        effect.accesses = (*effect.accesses, ("w", *effect.accesses[0][1:]))


def _string_areas(effect, repeated):
    """A movs's or stos's accesses as the areas they span (a barrier where a segment override names others)."""
    if any(
        ref is None or ref.segment is not None or ref.index is not None or type(ref) is Address32
        for _, ref, _ in effect.accesses
    ):  # (rdi and rsi as 32 bits under an address-size prefix)
        effect.barrier = True
        return
    element = {"b": 1, "w": 2, "d": 4, "q": 8}[effect.mnemonic[-1]]
    effect.accesses = tuple(
        (kind, StringArea(RDI if kind == "w" else RSI, None, 1, 0, None, element=element, repeated=repeated),
         STRING_AREA_BOUND)
        for kind in ("r", "w") if kind == "w" or effect.mnemonic[0] == "m"
    )  # fmt: skip
    effect.reads |= {RDI, DF} | ({RCX} if repeated else set()) | ({RSI} if effect.mnemonic[0] == "m" else set())


def _bit_string(effect):
    """``bt*`` of memory by a register: its accesses are at the word the offset picks (BitString), not at the
    operand's address."""
    destination, offset = effect.operands
    if destination.ref is None:
        return
    ref = destination.ref
    word = BitString(ref.base, ref.index, ref.scale, ref.disp, ref.segment, offset.reg, destination.width // 8)
    effect.accesses = tuple((kind, word if area == ref else area, size) for kind, area, size in effect.accesses)
    effect.operands = (replace(destination, ref=word), offset)


def _state_area(effect):
    """fxsave writes 512 bytes; the xsave family an area whose size the components asked for decide (StateArea).
    The restores read such an area, but only the parts its header marks: bytes they may have read (``partial``),
    as far as the standard layout of the components asked for reaches (a compacted area ends no later)."""
    first = effect.operands[0] if effect.operands else None
    restore = effect.mnemonic in _STATE_RESTORES
    effect.accesses = ()
    if restore:
        effect.writes, effect.partial = frozenset(VECTORS), True
    if first is None or first.kind != "mem" or first.ref is None:
        effect.barrier = effect.mnemonic in _STATE_SAVES
        return
    kind = "r" if restore else "w"
    if effect.mnemonic.startswith(("fxsave", "fxrstor")):
        effect.accesses = ((kind, first.ref, 512),)
    elif type(first.ref) is Address32:  # an xsave area addressed in 32 bits: not followed
        effect.barrier = effect.mnemonic in _STATE_SAVES
    else:
        ref = first.ref
        compacted = effect.mnemonic.startswith(("xsavec", "xsaves"))
        area = StateArea(ref.base, ref.index, ref.scale, ref.disp, ref.segment, compacted)
        effect.accesses = ((kind, area, STATE_AREA_BOUND),)
        effect.reads |= {RAX, RDX}


def _destination_written(effect):
    """capstone marks some read-modify-write destinations as read only (cmpxchg): a first operand in memory is
    taken as read and written, unless the instruction only compares (only the emulator uses these accesses)."""
    if not effect.operands or effect.operands[0].kind != "mem" or effect.mnemonic in ("cmp", "test", "bt"):
        return
    destination = effect.operands[0]
    kinds = {kind for kind, ref, _ in effect.accesses if ref == destination.ref}
    effect.accesses += tuple(
        (kind, destination.ref, destination.width // 8) for kind in ("r", "w") if kind not in kinds
    )


def _vector(effect, insn):
    """SSE/AVX/AVX-512/MMX: the copies vector.py knows are kind "mov"; the others write every vector register they
    name (for all we know), their general-purpose destination (kmovd eax, pextrb) and the flags of the comparisons;
    memory through the operands only, a memory destination written (capstone's access flags are unreliable there:
    vptestnmb k0 is "read")."""
    if vector_copy(effect, insn):
        return
    effect.kind = "opaque"
    writes = set(effect.writes) | vectors_named(insn)
    if effect.mnemonic.startswith(_KEY_LOCKER):  # they write xmm0..xmm7 unnamed
        writes |= set(VECTORS[:8])
    first = effect.operands[0] if effect.operands else None
    if first is not None and first.kind == "reg":
        writes.add(first.reg[0])
    if effect.mnemonic.removeprefix("v").startswith(_VECTOR_FLAG_WRITERS):
        writes.add(RFLAGS)
    effect.writes = frozenset(writes)
    accesses = [("r", ref, size) for kind, ref, size in effect.accesses if kind == "r"]
    if first is not None and first.kind == "mem":
        accesses.append(("w", first.ref, first.width // 8))
        effect.partial = "{k" in insn.op_str or effect.mnemonic.removeprefix("v").startswith(_PARTIAL_STORES)
        effect.barrier |= first.width == 0 or first.ref is None
    effect.barrier |= effect.mnemonic in _IMPLICIT_STORES or "scatter" in effect.mnemonic
    effect.accesses = tuple(access for access in accesses if access[1] is not None)


def _x87(effect, insn):
    """x87: ax (fnstsw) and rflags (fcomi) are the only tracked registers written; the stores write their operand
    (capstone marks them as reads and omits some from the FPU group)."""
    effect.kind = "opaque"
    mnemonic, first = effect.mnemonic, effect.operands[0] if effect.operands else None
    writes = set(effect.writes)
    if mnemonic in ("fnstsw", "fstsw") and first is not None and first.kind == "reg":
        writes.add(RAX)
    if mnemonic.startswith(("fcomi", "fucomi")):
        writes.add(RFLAGS)
    effect.writes = frozenset(writes)
    accesses = [("r", ref, size) for kind, ref, size in effect.accesses if kind == "r" and ref is not None]
    if first is not None and first.kind == "mem" and mnemonic in _X87_STORES:
        size = first.width // 8 or _X87_STORES[mnemonic]
        effect.barrier = not size or first.ref is None
        accesses = [access for access in accesses if access[1] != first.ref] + [("w", first.ref, size)]
    effect.accesses = tuple(access for access in accesses if access[1] is not None)


def _has_vector_register(insn):
    return any(_VECTOR_NAME.fullmatch(insn.reg_name(number) or "") for number in _all_registers(insn))


def _all_registers(insn):
    listed_reads, listed_writes = insn.regs_access()
    explicit = [operand.reg for operand in insn.operands if operand.type == x86.X86_OP_REG]
    return (*explicit, *listed_reads, *listed_writes)


def _condition(mnemonic):
    return any(mnemonic in (f"cmov{c}", f"set{c}") for c in _CONDITIONS)


def _is_vector(insn):
    """SSE/AVX instructions: capstone lists the registers they write; they touch memory through operands only."""
    vector_groups = {getattr(x86, f"X86_GRP_{name}") for name in ("SSE1", "SSE2", "SSE3", "SSSE3", "SSE41", "SSE42")}
    vector_groups |= {x86.X86_GRP_AVX, x86.X86_GRP_AVX2, x86.X86_GRP_AVX512}
    return bool(vector_groups & set(insn.groups)) and insn.mnemonic not in _UNTRACKED_TOUCH_MEMORY


def _register_or_memory(effect):
    return all(operand.kind in ("reg", "imm", "mem") for operand in effect.operands)


def _reads_of(operand):
    return frozenset((operand.reg[0],)) if operand.kind == "reg" else frozenset()


def _opaque(effect, insn, vetted):
    """Nothing computed: what it may write becomes unknown; unvetted, that is every register and all memory."""
    effect.kind = "opaque"
    effect.writes = effect.writes | set(_OPAQUE_WRITES.get(effect.mnemonic, ()))
    if vetted:
        effect.writes |= {RFLAGS} if insn.mnemonic.startswith(("comi", "ucomi", "vcomi", "vucomi", "ptest")) else set()
        return
    effect.writes = frozenset((*GPRS, RFLAGS, FS_BASE, GS_BASE, *VECTORS, DF))
    effect.barrier = True
    effect.accesses = tuple(access for access in effect.accesses if access[0] == "r" and access[1] is not None)
