"""Locations of a traced process's addresses from its module files alone (no LLDB).

Gives the answers LLDB gives for the same addresses (see elf_symbols.py and
dwarf_lines.py for how): the module's file name, the function (or the PLT
stub's symbol), the line table row's file and line, and the instruction in
AT&T or Intel syntax.
"""

import os
import weakref
from bisect import bisect_right

from ..elf_info import UNREADABLE_ELF, ElfInfo
from .elf_symbols import ModuleSymbols
from .location import Location
from .symbolizer import Symbolizer


class ElfSymbolizer(Symbolizer):
    """``locate(address) -> Location`` for bundle ``modules`` (at run-time addresses), code read from ``module_bytes``
    (a ModuleBytes)."""

    def __init__(self, modules, module_bytes, flavor="att"):
        super().__init__(module_bytes, flavor)
        self._modules = sorted(modules, key=lambda module: module.load_address)
        self._starts = [module.load_address for module in self._modules]
        self._symbols = {}

    def _locate(self, address):
        mnemonic, operands = self.instruction(address)
        module = self._module_at(address)
        if module is None:
            return Location(None, None, None, None, mnemonic, operands)
        symbols, bias = self._module_symbols(module)
        file_address = address - bias
        function = symbols.function_at(file_address) if symbols else None
        line = symbols.line_at(file_address) if symbols else None
        return Location(
            os.path.basename(module.path),
            function[0] if function else None,
            line[0] if line else None,
            line[1] if line and line[1] else None,
            mnemonic,
            operands,
            stub=bool(function and function[1]),
            resolver=bool(function and function[2]),
        )

    def function_entries(self, name):
        return sorted(start + bias for symbols, bias in self._all_symbols() for start in symbols.entries_named(name))

    def ifunc_entries(self, name):
        return sorted(
            start + bias for symbols, bias in self._all_symbols() for start in symbols.entries_named(name, True)
        )

    def line_starts(self, file, line):
        return sorted(
            start + bias for symbols, bias in self._all_symbols() for start in symbols.line_starts(file, line)
        )

    def _all_symbols(self):
        found = (self._module_symbols(module) for module in self._modules)
        return [(symbols, bias) for symbols, bias in found if symbols is not None]

    def prologue_end(self, function_entry):
        module = self._module_at(function_entry)
        symbols, bias = self._module_symbols(module) if module is not None else (None, 0)
        found = symbols.prologue_end(function_entry - bias) if symbols else None
        return found + bias if found is not None else None

    def row_start(self, address):
        module = self._module_at(address)
        symbols, bias = self._module_symbols(module) if module is not None else (None, 0)
        found = symbols.row_start(address - bias) if symbols else None
        return found + bias if found is not None else None

    def _module_at(self, address):
        k = bisect_right(self._starts, address) - 1
        if k < 0:
            return None
        module = self._modules[k]
        return module if address < module.load_address + module.size else None

    def _module_symbols(self, module):
        """``(ModuleSymbols or None, run-time minus file address)`` of ``module``, read once."""
        key = module.load_address
        if key not in self._symbols:
            try:
                elf = ElfInfo.read(module.path)
                symbols = _symbols_of(elf)
            except UNREADABLE_ELF:
                self._symbols[key] = (None, 0)
            else:
                self._symbols[key] = (symbols, module.load_address - elf.first_load_vaddr)
        return self._symbols[key]


_shared = weakref.WeakValueDictionary()  # ElfInfo -> its ModuleSymbols, while a symbolizer holds them


def _symbols_of(elf):
    """One ModuleSymbols per version of a module file (ElfInfo.read gives one ElfInfo each), shared by every
    symbolizer using it: a bundle of many processes loads the same libraries many times."""
    symbols = _shared.get(elf)
    if symbols is None:
        symbols = _shared[elf] = ModuleSymbols(elf.path, elf.build_id)
    return symbols
