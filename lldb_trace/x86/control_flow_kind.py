"""An instruction's control-flow kind, named as LLDB names it (``thread trace dump instructions --kind``).

LLDB's kinds: other, call, return, jump, cond jump, far call, far return, far
jump.  "Far" is a transfer that can change privilege level (syscall, int,
iret, sysret, far call/jmp/ret): in a user-space trace these are where the
thread entered or left the kernel.
"""

import capstone
from capstone import x86

from .instructions import MAX_INSN_SIZE

_LOOPS = {x86.X86_INS_LOOP, x86.X86_INS_LOOPE, x86.X86_INS_LOOPNE}
_FAR_CALLS = {x86.X86_INS_VMCALL, x86.X86_INS_VMMCALL}
_INDIRECT_OPCODE = 0xFF  # call/jmp through a register or memory; ModRM.reg 3 and 5 are the far forms
_FAR_CALL_REG, _FAR_JUMP_REG = 3, 5


class ControlFlowKinds(dict):
    """``kinds[address]``: the kind of the instruction at ``address``, read through ``read(address, size)``."""

    def __init__(self, read):
        super().__init__()
        self._read = read
        self._disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._disassembler.detail = True

    def __missing__(self, address):
        decoded = next(self._disassembler.disasm(self._read(address, MAX_INSN_SIZE) or b"", address, 1), None)
        kind = self[address] = kind_of(decoded) if decoded is not None else "unknown"
        return kind


def kind_of(insn):
    """The kind of one capstone instruction (decoded with ``detail``)."""
    groups = set(insn.groups)
    far_form = insn.opcode[0] == _INDIRECT_OPCODE and (insn.modrm >> 3) & 7
    if capstone.CS_GRP_INT in groups or insn.id in _FAR_CALLS:
        return "far call"
    if capstone.CS_GRP_IRET in groups or insn.id == x86.X86_INS_RETF:
        return "far return"
    if capstone.CS_GRP_RET in groups:
        return "return"
    if capstone.CS_GRP_CALL in groups:
        return "far call" if far_form == _FAR_CALL_REG else "call"
    if insn.id == x86.X86_INS_JMP:
        return "far jump" if far_form == _FAR_JUMP_REG else "jump"
    if capstone.CS_GRP_JUMP in groups or insn.id in _LOOPS:
        return "cond jump"
    return "other"
