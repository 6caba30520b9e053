"""The symbolizer protocol: what the views and the API ask of an address, answered once per address.

A view needs one thing from a symbolizer: ``locate(address) -> Location``.
Where the module, function and line come from is the implementation's
business (LLDB in ``debugger/symbolizer.py``, the ELF and DWARF files in
``elf_symbolizer.py``); the disassembly and the per-address cache are the
same for both, so they live here.
"""

from abc import ABC, abstractmethod

from .disassembly import Disassembler


class Symbolizer(ABC):
    """``locate(address) -> Location``, cached: a trace visits the same code over and over.

    Code is read through ``module_bytes`` (a ModuleBytes) and disassembled in ``flavor`` ("att" or "intel").
    """

    def __init__(self, module_bytes, flavor="att"):
        self._disassembler = Disassembler(module_bytes.read, flavor)
        self._cache = {}

    def locate(self, address):
        found = self._cache.get(address)
        if found is None:
            found = self._cache[address] = self._locate(address)
        return found

    def instruction(self, address):
        """``(mnemonic, operands)`` of the instruction at ``address``."""
        return self._disassembler.instruction(address)

    @abstractmethod
    def function_entries(self, name):
        """Run-time addresses of the functions called ``name`` (for finding their calls)."""

    def ifunc_entries(self, name):
        """Run-time addresses of the IFUNCs called ``name``: their resolvers' entries, whose runs choose the
        function that runs under the name (no calls of it)."""
        return []

    @abstractmethod
    def line_starts(self, file, line):
        """Run-time addresses where ``line`` of ``file`` begins (as a breakpoint on it would resolve)."""

    def prologue_end(self, function_entry):
        """Where ``step`` into the function entered at ``function_entry`` stops (after its prologue), or None."""
        return None

    def inlined_ranges(self, address):
        """``[[(start, end)]]``: the addresses of each inlined call holding ``address``, the innermost first; empty
        where it is in none (or the implementation does not know: the ELF symbolizer reads no inlining)."""
        return []

    @abstractmethod
    def _locate(self, address):
        """The Location of ``address``, found the implementation's way (called once per address)."""
