"""What an instruction does to control flow, as Intel PT encodes it.

capstone decodes each instruction address once; the result is cached, since
a traced program runs the same code over and over.
"""

from dataclasses import dataclass
from enum import IntEnum

import capstone
from capstone import x86

MAX_INSN_SIZE = 15


class Transfer(IntEnum):
    """How PT reports an instruction's successor."""

    OTHER = 0  # falls through; no packet
    DIRECT = 1  # direct jmp/call: target is in the code; no packet
    CONDITIONAL = 2  # one TNT bit
    INDIRECT = 3  # indirect jmp/call and returns: a TIP with the target
    FAR = 4  # syscall, int, iret, far transfers: leave user space (TIP.PGD)


@dataclass(frozen=True, slots=True)
class Insn:
    address: int
    size: int
    transfer: Transfer
    target: int | None  # for DIRECT and CONDITIONAL
    repeats: bool  # REP/REPNE string instruction: ptrace stops once per iteration
    emulated: bool = False  # one the kernel runs for the program under UMIP (sgdt...): a single step skips past it

    @property
    def next_address(self):
        return self.address + self.size

    @property
    def straight_successor(self):
        """Where a non-branching instruction or a direct jmp/call goes next (no packet needed)."""
        return self.target if self.transfer == Transfer.DIRECT else self.address + self.size


# What the kernel emulates when UMIP makes it fault in user mode; the single step's trap after it is lost, so the
# thread stops after the instruction that follows it.
_UMIP_EMULATED = frozenset(("sgdt", "sidt", "sldt", "smsw", "str"))
_FAR_MNEMONICS = {"syscall", "sysenter", "int", "int1", "int3", "into", "iret", "iretd", "iretq", "ud2", "hlt"}
_FAR_MNEMONICS |= {"sysret", "sysexit", "ljmp", "lcall", "retf", "retfq"}
# LOOP and JrCXZ are conditional branches for PT, but capstone puts LOOP in no jump group.
_LOOPS = {x86.X86_INS_LOOP, x86.X86_INS_LOOPE, x86.X86_INS_LOOPNE}
_STRING_OPS = {x86.X86_INS_MOVSB, x86.X86_INS_MOVSW, x86.X86_INS_MOVSD, x86.X86_INS_MOVSQ}
_STRING_OPS |= {x86.X86_INS_STOSB, x86.X86_INS_STOSW, x86.X86_INS_STOSD, x86.X86_INS_STOSQ}
_STRING_OPS |= {x86.X86_INS_LODSB, x86.X86_INS_LODSW, x86.X86_INS_LODSD, x86.X86_INS_LODSQ}
_STRING_OPS |= {x86.X86_INS_SCASB, x86.X86_INS_SCASW, x86.X86_INS_SCASD, x86.X86_INS_SCASQ}
_STRING_OPS |= {x86.X86_INS_CMPSB, x86.X86_INS_CMPSW, x86.X86_INS_CMPSD, x86.X86_INS_CMPSQ}
_STRING_OPS |= {x86.X86_INS_INSB, x86.X86_INS_INSW, x86.X86_INS_INSD, x86.X86_INS_OUTSB, x86.X86_INS_OUTSW}
_STRING_OPS |= {x86.X86_INS_OUTSD}


class Classifier(dict):
    """Classifies instructions read through ``read_memory(address, size) -> bytes``.

    A dict from address to Insn that decodes on a miss, so the recorder's hot
    path is a plain dict lookup.
    """

    def __init__(self, read_memory):
        super().__init__()
        self._read = read_memory
        self._cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._cs.detail = True

    def __missing__(self, address):
        insn = self[address] = self._classify(address)
        return insn

    def _classify(self, address):
        code = self._read(address, MAX_INSN_SIZE)
        decoded = next(self._cs.disasm(code, address, 1), None)
        if decoded is None:
            size = evex_length(code)  # an AVX512-FP16 instruction capstone 5 does not know: no branch
            if size is not None:
                return Insn(address, size, Transfer.OTHER, None, False)
            return Insn(address, 1, Transfer.FAR, None, False)  # undecodable: treat as leaving the trace
        transfer, target = _transfer(decoded)
        repeats = decoded.id in _STRING_OPS and any(p in (0xF2, 0xF3) for p in decoded.prefix)
        return Insn(address, decoded.size, transfer, target, repeats, decoded.mnemonic in _UMIP_EMULATED)


def _transfer(decoded):
    mnemonic = decoded.mnemonic
    if mnemonic in _FAR_MNEMONICS:
        return Transfer.FAR, None
    groups = set(decoded.groups)
    if capstone.CS_GRP_RET in groups or capstone.CS_GRP_IRET in groups:
        return Transfer.INDIRECT, None
    if capstone.CS_GRP_INT in groups:
        return Transfer.FAR, None
    is_call = capstone.CS_GRP_CALL in groups
    is_jump = capstone.CS_GRP_JUMP in groups or decoded.id in _LOOPS
    if not (is_call or is_jump):
        return Transfer.OTHER, None
    operand = decoded.operands[0] if decoded.operands else None
    direct = operand is not None and operand.type == x86.X86_OP_IMM
    if not direct:
        return Transfer.INDIRECT, None
    if is_call or decoded.id == x86.X86_INS_JMP:
        return Transfer.DIRECT, operand.imm
    return Transfer.CONDITIONAL, operand.imm  # jcc, jrcxz, loop*


_LEGACY_PREFIXES = frozenset((0x66, 0x67, 0xF2, 0xF3, 0xF0, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65))
_EVEX_MAPS_WITHOUT_IMMEDIATE, _EVEX_MAP_WITH_IMMEDIATE = (5, 6), 3


def evex_length(code):
    """The length of an EVEX instruction of map 3, 5 or 6 (AVX512-FP16's, which capstone 5 does not decode), or
    None: legacy prefixes, the four EVEX bytes, the opcode, ModRM and what it asks for (SIB, displacement), and
    map 3's immediate byte.  No instruction of those maps branches."""
    at = 0
    while at < len(code) and code[at] in _LEGACY_PREFIXES:
        at += 1
    if at + 6 > len(code) or code[at] != 0x62:
        return None
    space = code[at + 1] & 7
    if space not in (*_EVEX_MAPS_WITHOUT_IMMEDIATE, _EVEX_MAP_WITH_IMMEDIATE):
        return None
    modrm, at = code[at + 5], at + 6
    mode, rm = modrm >> 6, modrm & 7
    if mode != 3:
        if rm == 4:  # a SIB byte, whose base 5 without a displacement means a 32-bit one
            if at >= len(code):
                return None
            at += 1 + (4 if mode == 0 and code[at] & 7 == 5 else 0)
        elif mode == 0 and rm == 5:  # rip-relative
            at += 4
        at += {1: 1, 2: 4}.get(mode, 0)
    at += 1 if space == _EVEX_MAP_WITH_IMMEDIATE else 0
    return at if at <= MAX_INSN_SIZE else None
