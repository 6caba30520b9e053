"""What an address is, for the dumps: module, function, source line and disassembly.

Symbols and lines come from LLDB (so debug info, demangling and source maps
work as everywhere else in LLDB); disassembly comes from capstone over the
module bytes, in the flavor LLDB's ``target.x86-disassembly-flavor`` asks for
(AT&T unless it says intel).  Everything is cached per address: a trace
visits the same code over and over.
"""

import os
from dataclasses import dataclass

import capstone
import lldb

from ..x86_flow import MAX_INSN_SIZE


@dataclass(frozen=True)
class Location:
    module: str | None
    function: str | None
    file: str | None
    line: int | None
    mnemonic: str
    operands: str

    @property
    def function_label(self):
        """``module`function`` as LLDB prints it (``module`0xADDR`` without a symbol)."""
        return f"{self.module or '(no module)'}`{self.function or '(no symbol)'}"

    @property
    def source(self):
        return f"{os.path.basename(self.file)}:{self.line}" if self.file and self.line else None


def disassembly_flavor(debugger):
    values = lldb.SBDebugger.GetInternalVariableValue("target.x86-disassembly-flavor", debugger.GetInstanceName())
    value = values.GetStringAtIndex(0) if values and values.GetSize() else "default"
    return "intel" if value == "intel" else "att"


class Symbolizer:
    """Locations of addresses in ``target``, reading code through a CodeMemory."""

    def __init__(self, target, memory, flavor="att"):
        self.target = target
        self.memory = memory
        self.disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self.disassembler.syntax = capstone.CS_OPT_SYNTAX_INTEL if flavor == "intel" else capstone.CS_OPT_SYNTAX_ATT
        self._cache = {}

    def locate(self, address):
        found = self._cache.get(address)
        if found is None:
            found = self._cache[address] = self._locate(address)
        return found

    def _locate(self, address):
        resolved = self.target.ResolveLoadAddress(address)
        module = resolved.GetModule()
        symbol = resolved.GetSymbol()
        line_entry = resolved.GetLineEntry()
        file_spec = line_entry.GetFileSpec() if line_entry.IsValid() else None
        code = self.memory.read(address, MAX_INSN_SIZE)
        decoded = next(self.disassembler.disasm_lite(code, address, 1), None) if code else None
        mnemonic, operands = (decoded[2], decoded[3]) if decoded else ("<unreadable>", "")
        return Location(
            module.GetFileSpec().GetFilename() if module.IsValid() else None,
            symbol.GetName() if symbol.IsValid() else None,
            file_spec.fullpath if file_spec and file_spec.IsValid() else None,
            line_entry.GetLine() if line_entry.IsValid() and line_entry.GetLine() else None,
            mnemonic,
            operands,
        )
