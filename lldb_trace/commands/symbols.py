"""What an address is, for the dumps: module, function, source line and disassembly, from LLDB.

Symbols and lines come from LLDB (so debug info, demangling and source maps
work as everywhere else in LLDB); disassembly comes from capstone over the
module bytes, in the flavor LLDB's ``target.x86-disassembly-flavor`` asks for
(AT&T unless it says intel).  Everything is cached per address: a trace
visits the same code over and over.  Outside LLDB, ``symbolize.ElfSymbolizer``
gives the same Locations from the module files.
"""

import lldb

from ..symbolize import Disassembler, Location


def disassembly_flavor(debugger):
    values = lldb.SBDebugger.GetInternalVariableValue("target.x86-disassembly-flavor", debugger.GetInstanceName())
    value = values.GetStringAtIndex(0) if values and values.GetSize() else "default"
    return "intel" if value == "intel" else "att"


class Symbolizer:
    """Locations of addresses in ``target``, reading code through a CodeMemory."""

    def __init__(self, target, memory, flavor="att"):
        self.target = target
        self._disassembler = Disassembler(memory.read, flavor)
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
        mnemonic, operands = self._disassembler.instruction(address)
        return Location(
            module.GetFileSpec().GetFilename() if module.IsValid() else None,
            symbol.GetName() if symbol.IsValid() else None,
            file_spec.fullpath if file_spec and file_spec.IsValid() else None,
            line_entry.GetLine() if line_entry.IsValid() and line_entry.GetLine() else None,
            mnemonic,
            operands,
            stub=symbol.IsValid() and symbol.GetType() == lldb.eSymbolTypeTrampoline,
        )
