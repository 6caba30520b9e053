"""What an address is: module, function, source line and disassembly.

``Symbolizer`` is the protocol the views and the API use (``locate(address)
-> Location``, cached per address).  Two implementations give the same
Locations: the LLDB one (``debugger/symbolizer.py``), and ``ElfSymbolizer``
here, which reads the ELF symbol tables, PLT relocations and DWARF line
tables of the modules with pyelftools, so scripts and ``lldb-trace dump``
get the same answers without a debugger.
"""

from .disassembly import Disassembler
from .elf_symbolizer import ElfSymbolizer
from .location import Location
from .symbolizer import Symbolizer

__all__ = ["Disassembler", "ElfSymbolizer", "Location", "Symbolizer"]
