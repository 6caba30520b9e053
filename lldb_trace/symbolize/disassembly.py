"""One instruction's text, in AT&T or Intel syntax (capstone), for both symbolizers."""

import capstone

from ..x86.instructions import MAX_INSN_SIZE


class Disassembler:
    """Disassembles single instructions read through ``read(address, size) -> bytes``."""

    def __init__(self, read, flavor="att"):
        self._read = read
        self._capstone = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._capstone.syntax = capstone.CS_OPT_SYNTAX_INTEL if flavor == "intel" else capstone.CS_OPT_SYNTAX_ATT

    def instruction(self, address):
        """``(mnemonic, operands)`` of the instruction at ``address``; ``("<unreadable>", "")`` without its bytes."""
        code = self._read(address, MAX_INSN_SIZE)
        decoded = next(self._capstone.disasm_lite(code, address, 1), None) if code else None
        return (decoded[2], decoded[3]) if decoded else ("<unreadable>", "")
