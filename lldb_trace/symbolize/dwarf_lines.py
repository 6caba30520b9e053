"""Source lines from DWARF line programs (pyelftools), as LLDB's line entries give them.

A large library's debug file holds thousands of compile units, so a unit's
line program is read only when an address inside it is asked for (found
through ``.debug_aranges``; without them, every unit is read at once).
Within a sequence, rows at one address keep the last, as LLDB's line table does;
a row repeating the line before it is dropped once that line had a non-zero
discriminator (a loop's basic blocks), as GDB's reader does, so that row
starts are where GDB's stepping stops.
"""

import os
from bisect import bisect_right

from ..elf_info import UNREADABLE_ELF, checked_elf


class _Sequence:
    """One contiguous run of rows: ``starts[k]`` begins the row ``(file, line)`` of ``rows[k]``."""

    def __init__(self):
        self.starts, self.rows, self.end = [], [], None

    def add(self, address, row):
        if self.starts and self.starts[-1] == address:
            self.rows[-1] = row
        else:
            self.starts.append(address)
            self.rows.append(row)


class LineTable:
    """``find(file address) -> (full path, line)`` over the DWARF of the ELF file at ``path``."""

    def __init__(self, path):
        with open(path, "rb") as f:  # the DWARF sections are copied into memory: the file can close
            self._dwarf = checked_elf(f).get_dwarf_info()
        self._aranges = self._dwarf.get_aranges()
        self._units = {}  # compile unit offset -> its sequences, sorted by start
        self._everything = None

    def find(self, address):
        found = self._row(address)
        return found[0].rows[found[1]] if found else None

    def line_starts(self, file, line):
        """Addresses where ``line`` of ``file`` (a path, or a file name) begins: rows whose previous row differs."""
        if self._everything is None:
            self._everything = self._read(self._dwarf.iter_CUs)
        found = []
        for sequence in self._everything.sequences:
            previous = None
            for address, row in zip(sequence.starts, sequence.rows, strict=True):
                if row != previous and row[1] == line and _same_file(row[0], file):
                    found.append(address)
                previous = row
        return found

    def row_start(self, address):
        """The address where the row covering ``address`` begins, or None (no row covers it)."""
        found = self._row(address)
        return found[0].starts[found[1]] if found else None

    def next_row(self, address):
        """The address where the row after the one covering ``address`` starts, or None (the sequence ends)."""
        found = self._row(address)
        if not found:
            return None
        sequence, k = found
        return sequence.starts[k + 1] if k + 1 < len(sequence.starts) else None

    def _row(self, address):
        """``(sequence, row number)`` covering ``address``, or None."""
        if self._aranges is not None:
            offset = self._aranges.cu_offset_at_addr(address)
            if offset is None:
                return None
            if offset not in self._units:
                self._units[offset] = self._read(lambda: [self._dwarf.get_CU_at(offset)])
            return self._units[offset].find(address)
        if self._everything is None:
            self._everything = self._read(self._dwarf.iter_CUs)
        return self._everything.find(address)

    def _read(self, units):
        """The _Sequences of the compile units ``units()`` gives; none of them when their DWARF is damaged."""
        try:
            return _Sequences([s for unit in units() for s in _sequences(self._dwarf, unit)])
        except UNREADABLE_ELF:
            return _Sequences([])


class _Sequences:
    """Sequences sorted by their first address (they do not overlap)."""

    def __init__(self, sequences):
        self._sequences = self.sequences = sorted(sequences, key=lambda s: s.starts[0])
        self._firsts = [s.starts[0] for s in self._sequences]

    def find(self, address):
        """``(sequence, row number)`` covering ``address``, or None."""
        k = bisect_right(self._firsts, address) - 1
        if k < 0 or address >= self._sequences[k].end:
            return None
        sequence = self._sequences[k]
        return sequence, bisect_right(sequence.starts, address) - 1


def _same_file(path, wanted):
    """Does ``path`` name the file ``wanted`` (a full path, or a name or trailing path as users type them)?"""
    if not path:
        return False
    return path == wanted or path.endswith(os.sep + wanted.lstrip(os.sep))


def _sequences(dwarf, unit):
    program = dwarf.line_program_for_CU(unit)
    if program is None:
        return []
    paths = _file_paths(program, unit)
    found, current, last, discriminated = [], _Sequence(), None, False
    for opcode in program.get_entries():
        state = opcode.state
        if state is None:
            continue
        if state.end_sequence:
            if current.starts:
                current.end = state.address
                found.append(current)
            current, last, discriminated = _Sequence(), None, False
            continue
        row = (paths.get(state.file), state.line)
        discriminated = (discriminated and row == last) or state.discriminator != 0
        if row != last or not discriminated:  # GDB drops a same-line row once the line had a discriminator
            current.add(state.address, row)
        last = row
    return found


def _file_paths(program, unit):
    """File index -> path, numbered and joined as LLVM's line tables do (DWARF 5 counts from 0, earlier from 1)."""
    version = program.header["version"]
    comp_dir = _text(unit.get_top_DIE().attributes.get("DW_AT_comp_dir")) or ""
    directories = [_decoded(d) for d in program["include_directory"]]
    paths = {}
    for k, listed in enumerate(program["file_entry"]):
        if version >= 5:
            index, directory = k, directories[listed.dir_index] if listed.dir_index < len(directories) else ""
            in_comp_dir = listed.dir_index != 0  # directory 0 is the compilation directory itself
        else:
            index, directory = k + 1, "" if listed.dir_index == 0 else directories[listed.dir_index - 1]
            in_comp_dir = True
        path = os.path.join(directory, _decoded(listed.name))
        if in_comp_dir:
            path = os.path.join(comp_dir, path)
        paths[index] = os.path.normpath(path)  # LLDB's FileSpec drops . and folds ..
    return paths


def _text(attribute):
    return _decoded(attribute.value) if attribute is not None else None


def _decoded(value):
    """A DWARF string as text: "" where a damaged file has no string (None, a number)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else ""
