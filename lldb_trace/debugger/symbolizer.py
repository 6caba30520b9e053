"""What an address is, answered by LLDB: the symbolizer of the ``pt`` commands and of ``api.of_target``.

Symbols and lines come from LLDB (so debug info, demangling and source maps
work as everywhere else in LLDB); disassembly comes from capstone over the
module bytes (see symbolize.Symbolizer), in the flavor LLDB's
``target.x86-disassembly-flavor`` asks for (AT&T unless it says intel).
Outside LLDB, ``symbolize.ElfSymbolizer`` gives the same Locations from the
module files.
"""

import lldb

from ..symbolize import Location, Symbolizer


def disassembly_flavor(debugger):
    values = lldb.SBDebugger.GetInternalVariableValue("target.x86-disassembly-flavor", debugger.GetInstanceName())
    value = values.GetStringAtIndex(0) if values and values.GetSize() else "default"
    return "intel" if value == "intel" else "att"


class LldbSymbolizer(Symbolizer):
    """Locations of addresses in ``target``, reading code through a ModuleBytes."""

    def __init__(self, target, module_bytes, flavor="att"):
        super().__init__(module_bytes, flavor)
        self.target = target

    def function_entries(self, name):
        found = set()
        for context in self.target.FindFunctions(name):
            block = context.GetBlock()
            if block.IsValid() and block.IsInlined():
                continue  # a copy inlined into another function (ld.so's malloc in _dl_lookup_symbol_x): no call
            function, symbol = context.GetFunction(), context.GetSymbol()
            start = function.GetStartAddress() if function.IsValid() else symbol.GetStartAddress()
            address = start.GetLoadAddress(self.target)
            if address != lldb.LLDB_INVALID_ADDRESS:
                found.add(address)
        return sorted(found)

    def ifunc_entries(self, name):
        found = set()
        for context in self.target.FindSymbols(name, lldb.eSymbolTypeResolver):
            address = context.GetSymbol().GetStartAddress().GetLoadAddress(self.target)
            if address != lldb.LLDB_INVALID_ADDRESS:
                found.add(address)
        return sorted(found)

    def line_starts(self, file, line):
        """The line's row starts in every compile unit of a file with that name (as a breakpoint resolves them)."""
        spec = lldb.SBFileSpec(file, False)
        found = set()
        for context in self.target.FindCompileUnits(spec):
            unit = context.GetCompileUnit()
            previous = None
            for k in range(unit.GetNumLineEntries()):
                line_entry = unit.GetLineEntryAtIndex(k)
                row = (line_entry.GetFileSpec().fullpath, line_entry.GetLine())
                if row != previous and line_entry.GetLine() == line and _same_file(line_entry.GetFileSpec(), spec):
                    address = line_entry.GetStartAddress().GetLoadAddress(self.target)
                    if address != lldb.LLDB_INVALID_ADDRESS:
                        found.add(address)
                previous = row
        return sorted(found)

    def prologue_end(self, function_entry):
        function = self.target.ResolveLoadAddress(function_entry).GetFunction()
        if not function.IsValid() or function.GetStartAddress().GetLoadAddress(self.target) != function_entry:
            return None
        return function_entry + function.GetPrologueByteSize()

    def inlined_ranges(self, address):
        found = []
        block = self.target.ResolveLoadAddress(address).GetBlock()
        block = block.GetContainingInlinedBlock() if block.IsValid() else block
        while block.IsValid() and block.IsInlined():
            found.append([(self._load(block.GetRangeStartAddress(k)), self._load(block.GetRangeEndAddress(k)))
                          for k in range(block.GetNumRanges())])  # fmt: skip
            block = block.GetParent().GetContainingInlinedBlock()
        return found

    def _load(self, address):
        return address.GetLoadAddress(self.target)

    def _locate(self, address):
        resolved = self.target.ResolveLoadAddress(address)
        module = resolved.GetModule()
        symbol = resolved.GetSymbol()
        line_entry = resolved.GetLineEntry()
        file_spec = line_entry.GetFileSpec() if line_entry.IsValid() else None
        mnemonic, operands = self.instruction(address)
        return Location(
            module.GetFileSpec().GetFilename() if module.IsValid() else None,
            symbol.GetName() if symbol.IsValid() else None,
            file_spec.fullpath if file_spec and file_spec.IsValid() else None,
            line_entry.GetLine() if line_entry.IsValid() and line_entry.GetLine() else None,
            mnemonic,
            operands,
            stub=symbol.IsValid() and symbol.GetType() == lldb.eSymbolTypeTrampoline,
            resolver=symbol.IsValid() and symbol.GetType() == lldb.eSymbolTypeResolver,
        )


def _same_file(spec, wanted):
    """Does a line entry's file match the file asked for (its name, or its full path when one was given)?"""
    if spec.GetFilename() != wanted.GetFilename():
        return False
    return not wanted.GetDirectory() or spec.GetDirectory() == wanted.GetDirectory()
