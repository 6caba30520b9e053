"""The function names of one ELF module, found the way LLDB finds them.

LLDB's symbol table for a module holds its PLT stubs ("symbol stub for:" the
symbol of the matching ``R_X86_64_JUMP_SLOT`` relocation, the i-th
relocation for the i-th stub), its code symbols (``.symtab``, from the
separate debug file under ``/usr/lib/debug/.build-id`` when the module is
stripped, and ``.dynsym``), and a ``___lldb_unnamed_symbol_<file address>``
for each unwind (``.eh_frame``) entry that starts where no symbol does.  An
address belongs to the entry that starts last at or before it, if that entry
reaches it; otherwise to none (one without a size reaches the next symbol
or the end of its section).  The table is read on the first lookup
(a C library's unwind entries take about a second).
"""

from bisect import bisect_right
from functools import cached_property, wraps
from pathlib import Path
from typing import NamedTuple

from elftools.elf.sections import SymbolTableSection

from ..elf_info import UNREADABLE_ELF, checked_elf
from .dwarf_lines import LineTable

DEBUG_ROOT = Path("/usr/lib/debug/.build-id")
R_X86_64_JUMP_SLOT = 7
PLT_ENTRY_SIZE = 16
_CODE_TYPES = {"STT_FUNC", "STT_GNU_IFUNC", "STT_LOOS"}  # pyelftools names STT_GNU_IFUNC STT_LOOS
_BINDING_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1}  # aliases at one address: global, then weak, then local


def debug_file(build_id, root=DEBUG_ROOT):
    """The separate debug file of the module with ``build_id`` (Debian's ``-dbg`` packages), or None."""
    if not build_id or len(build_id) < 3:
        return None
    path = Path(root) / build_id[:2] / f"{build_id[2:]}.debug"
    return path if path.is_file() else None


def _or_else(default):
    """Make a reader of the module's files answer ``default()`` when a file is damaged: names, lines or
    unwind entries are then missing from the answers (as LLDB leaves them out), the trace still shows."""

    def guard(read):
        @wraps(read)
        def guarded(*args):
            try:
                return read(*args)
            except UNREADABLE_ELF:
                return default()

        return guarded

    return guard


def _no_ranges():
    return _Ranges([], [])


def _none():
    return None


class ModuleSymbols:
    """Names and source lines of one module, by file address (its addresses before relocation)."""

    def __init__(self, path, build_id=None):
        self.path = str(path)
        self.debug_path = debug_file(build_id)
        with open(self.path, "rb") as f:
            elf = checked_elf(f)
            self._has_symtab = _has_code_symbols(elf, ".symtab")
            self._has_lines = elf.get_section_by_name(".debug_line") is not None

    def function_at(self, address):
        """``(name, is_stub, is_ifunc)`` of what contains file address ``address``, or None."""
        found = self._table.find(address)
        return found.value if found is not None else None

    def line_at(self, address):
        """``(full path, line)`` of the line table row covering ``address``, or None."""
        return self._lines.find(address) if self._lines else None

    def entries_named(self, name, ifunc_only=False):
        """File addresses of the code symbols called ``name`` (or ``name@version``); only the IFUNCs'
        (their resolvers) with ``ifunc_only``."""
        return sorted(start for start, ifunc in self._names.get(name, {}).items() if ifunc or not ifunc_only)

    def line_starts(self, file, line):
        """File addresses where line ``line`` of a file named ``file`` (a path, or just its name) begins."""
        return self._lines.line_starts(file, line) if self._lines else []

    @cached_property
    @_or_else(dict)
    def _names(self):
        names = {}
        for path in {self._file_with(self._has_symtab), self.path}:
            with open(path, "rb") as f:
                for start, _size, _rank, (name, _stub, ifunc) in _code_symbols(checked_elf(f)):
                    for key in (name, name.split("@")[0]):
                        starts = names.setdefault(key, {})  # start -> is an IFUNC called so there
                        starts[start] = starts.get(start, False) or ifunc
        return names

    def row_start(self, address):
        """Where the line table row covering file address ``address`` begins, or None."""
        return self._lines.row_start(address) if self._lines else None

    def prologue_end(self, entry):
        """Where the function starting at file address ``entry`` leaves its prologue: its second line row."""
        return self._lines.next_row(entry) if self._lines else None

    def _file_with(self, in_module):
        """The module file when it has what is asked for, else its debug file (when there is one)."""
        return self.path if in_module or self.debug_path is None else str(self.debug_path)

    @cached_property
    @_or_else(_no_ranges)
    def _table(self):
        named = []
        # a debug file has the .symtab, the module the .dynsym, the PLT and the unwind entries
        for path in {self._file_with(self._has_symtab), self.path}:
            with open(path, "rb") as f:
                named += _code_symbols(checked_elf(f))
        with open(self.path, "rb") as f:
            elf = checked_elf(f)
            named += _plt_stubs(elf)
            unwind = _unwind_entries(elf)
            sections = [(s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections() if s["sh_addr"]]
        return _Ranges(named + unwind, sections)  # an unwind entry ranks last: it names only what no symbol does

    @cached_property
    @_or_else(_none)
    def _lines(self):
        path = self._file_with(self._has_lines)
        with open(path, "rb") as f:
            elf = checked_elf(f)
            if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_line") is None:
                return None
        return LineTable(path)


def _has_code_symbols(elf, name):
    table = elf.get_section_by_name(name)
    return isinstance(table, SymbolTableSection) and table.num_symbols() > 1


@_or_else(list)
def _unwind_entries(elf):
    """``(start, 0, rank, (name, False, False))`` of every ``.eh_frame`` entry (FDE).

    LLDB gives these symbols no size (an entry may span several functions):
    each one ends where the next symbol starts.
    """
    if elf.get_section_by_name(".eh_frame") is None:
        return []
    found = []
    for record in elf.get_dwarf_info().EH_CFI_entries():
        header = getattr(record, "header", None)
        if header is not None and "initial_location" in header:  # not a CIE or the terminator
            start = header["initial_location"]
            found.append((start, 0, 100, (f"___lldb_unnamed_symbol_{start:x}", False, False)))
    return found


@_or_else(list)
def _code_symbols(elf):
    """``(start, size, rank, (name, False, is_ifunc))`` of every defined code symbol (.symtab ranks before
    .dynsym)."""
    found = []
    for rank, name in ((0, ".symtab"), (20, ".dynsym")):
        table = elf.get_section_by_name(name)
        if not isinstance(table, SymbolTableSection):
            continue
        for symbol in table.iter_symbols():
            if symbol["st_info"]["type"] not in _CODE_TYPES or not isinstance(symbol["st_shndx"], int):
                continue
            if symbol["st_value"] and symbol.name:
                binding = _BINDING_RANK.get(symbol["st_info"]["bind"], 2)
                ifunc = symbol["st_info"]["type"] != "STT_FUNC"
                found.append((symbol["st_value"], symbol["st_size"], rank + binding, (symbol.name, False, ifunc)))
    return found


@_or_else(list)
def _plt_stubs(elf):
    """``(start, size, rank, (name, True, False))`` of the PLT stubs that LLDB names, by relocation order."""
    relocations = elf.get_section_by_name(".rela.plt")
    plt = elf.get_section_by_name(".plt.sec") or elf.get_section_by_name(".plt")
    if relocations is None or plt is None:
        return []
    base = plt["sh_addr"] + (0 if plt.name == ".plt.sec" else PLT_ENTRY_SIZE)  # .plt begins with PLT0
    symbols = elf.get_section(relocations["sh_link"])
    stubs = []
    for i, relocation in enumerate(relocations.iter_relocations()):
        if relocation["r_info_type"] != R_X86_64_JUMP_SLOT or not relocation["r_info_sym"]:
            continue
        start, name = base + i * PLT_ENTRY_SIZE, symbols.get_symbol(relocation["r_info_sym"]).name
        stubs.append((start, PLT_ENTRY_SIZE, -1, (name, True, False)))
    return stubs


class _Range(NamedTuple):
    start: int
    end: int
    value: tuple  # (name, is_stub, is_ifunc)

    def contains(self, address):
        return self.start <= address < self.end


class _Ranges:
    """Named address ranges by start (the best ranked one per start).

    One without a size ends where the next one starts, or with its section.
    """

    def __init__(self, candidates, sections):
        best = {}
        for start, size, rank, value in candidates:
            if start not in best or rank < best[start][1]:
                best[start] = (size, rank, value)
        self._starts = sorted(best)
        sections = sorted(sections)
        section_starts = [start for start, _ in sections]
        self._ranges = []
        for k, start in enumerate(self._starts):
            size, _rank, value = best[start]
            end = start + size
            if not size:
                section = bisect_right(section_starts, start) - 1
                end = sections[section][1] if section >= 0 and start < sections[section][1] else start + 1
                if k + 1 < len(self._starts):
                    end = min(end, self._starts[k + 1])
            self._ranges.append(_Range(start, end, value))

    def find(self, address):
        """The range that starts at ``address``, else the first of those that reach over it, as LLDB's symtab does."""
        k = bisect_right(self._starts, address) - 1
        if k < 0:
            return None
        if self._starts[k] != address:
            while k > 0 and self._ranges[k - 1].contains(address):
                k -= 1
        return self._ranges[k] if self._ranges[k].contains(address) else None
