"""What an address is, outside LLDB: module, function, source line and disassembly.

``Location`` is the answer both symbolizers give: the LLDB one the commands
use (``commands/symbols.py``) and ``ElfSymbolizer`` here, which reads the
ELF symbol tables, PLT relocations and DWARF line tables of the modules with
pyelftools, so scripts get the same answers without a debugger.
"""

from .disassembly import Disassembler
from .elf_symbolizer import ElfSymbolizer
from .location import Location

__all__ = ["Disassembler", "ElfSymbolizer", "Location"]
