"""Where a branch will go, computed from the registers before it runs.

The live recorder stops the thread at each branch instead of single-stepping
every instruction.  Knowing the branch's successor from the flags (Jcc) or
from its operand (indirect jmp/call, ret) lets it run straight to the next
branch with one breakpoint.  Anything this module cannot evaluate exactly
(LOOP, JrCXZ, segment-relative operands, far transfers) returns None and the
caller single-steps that one instruction instead: a guess would let the
thread run away unrecorded.
"""

import capstone
from capstone import x86

from .instructions import MAX_INSN_SIZE

_CF, _PF, _ZF, _SF, _OF = 1 << 0, 1 << 2, 1 << 6, 1 << 7, 1 << 11


def _flag(flags, bit):
    return bool(flags & bit)


_CONDITIONS = {
    x86.X86_INS_JO: lambda f: _flag(f, _OF),
    x86.X86_INS_JNO: lambda f: not _flag(f, _OF),
    x86.X86_INS_JB: lambda f: _flag(f, _CF),
    x86.X86_INS_JAE: lambda f: not _flag(f, _CF),
    x86.X86_INS_JE: lambda f: _flag(f, _ZF),
    x86.X86_INS_JNE: lambda f: not _flag(f, _ZF),
    x86.X86_INS_JBE: lambda f: _flag(f, _CF) or _flag(f, _ZF),
    x86.X86_INS_JA: lambda f: not (_flag(f, _CF) or _flag(f, _ZF)),
    x86.X86_INS_JS: lambda f: _flag(f, _SF),
    x86.X86_INS_JNS: lambda f: not _flag(f, _SF),
    x86.X86_INS_JP: lambda f: _flag(f, _PF),
    x86.X86_INS_JNP: lambda f: not _flag(f, _PF),
    x86.X86_INS_JL: lambda f: _flag(f, _SF) != _flag(f, _OF),
    x86.X86_INS_JGE: lambda f: _flag(f, _SF) == _flag(f, _OF),
    x86.X86_INS_JLE: lambda f: _flag(f, _ZF) or _flag(f, _SF) != _flag(f, _OF),
    x86.X86_INS_JG: lambda f: not _flag(f, _ZF) and _flag(f, _SF) == _flag(f, _OF),
}


class BranchEvaluator:
    """Successors of conditional and indirect branches, from register values and memory.

    ``read_memory(address, size) -> bytes`` reads the stopped process.
    ``successor`` takes ``register(name) -> int`` for the stopped thread.
    """

    def __init__(self, read_memory):
        self._read = read_memory
        self._cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._cs.detail = True
        self._decoded = {}

    def successor(self, address, register):
        """The address the branch at ``address`` goes to next, or None when it must be stepped."""
        evaluate = self._decoded.get(address)
        if evaluate is None:
            evaluate = self._decoded[address] = self._compile(address)
        try:
            return evaluate(register)
        except LookupError:  # a register the debugger cannot read
            return None

    def _compile(self, address):
        decoded = next(self._cs.disasm(self._read(address, MAX_INSN_SIZE), address, 1), None)
        if decoded is None:
            return _unknown
        following = decoded.address + decoded.size
        condition = _CONDITIONS.get(decoded.id)
        if condition is not None and decoded.operands and decoded.operands[0].type == x86.X86_OP_IMM:
            taken = decoded.operands[0].imm
            return lambda register: taken if condition(register("rflags")) else following
        groups = set(decoded.groups)
        if decoded.id == x86.X86_INS_RET and capstone.CS_GRP_RET in groups:
            return lambda register: self._pointer_at(register("rsp"))
        if decoded.id in (x86.X86_INS_JMP, x86.X86_INS_CALL) and len(decoded.operands) == 1:
            return self._operand_target(decoded, following)
        return _unknown

    def _operand_target(self, decoded, following):
        operand = decoded.operands[0]
        if operand.type == x86.X86_OP_REG:
            name = decoded.reg_name(operand.reg)
            return lambda register: register(name)
        if operand.type != x86.X86_OP_MEM or operand.mem.segment != x86.X86_REG_INVALID:
            return _unknown
        memory = operand.mem
        base = decoded.reg_name(memory.base) if memory.base else None
        index = decoded.reg_name(memory.index) if memory.index else None
        scale, displacement = memory.scale, memory.disp

        def target(register):
            address = displacement
            if base == "rip":
                address += following
            elif base:
                address += register(base)
            if index:
                address += register(index) * scale
            return self._pointer_at(address & 0xFFFFFFFFFFFFFFFF)

        return target

    def _pointer_at(self, address):
        data = self._read(address, 8)
        return int.from_bytes(data, "little") if len(data) == 8 else None


def _unknown(_register):
    return None
