"""Facts about ELF files that several layers need (pyelftools underneath).

A module file is untrusted input: every size and offset in its headers is
checked against the file before anything reads by it (pyelftools believes
them, and allocates what a section claims; LLDB divides by them), and
whatever pyelftools raises on a damaged file becomes one NotAnElfError.
"""

import os
import struct
from functools import cached_property, lru_cache
from typing import NamedTuple

from elftools.common.exceptions import DWARFError, ELFError
from elftools.construct.core import ConstructError
from elftools.elf.elffile import ELFFile

from .errors import LldbTraceError

# What pyelftools lets escape on a damaged file: its own ELFError and DWARFError, the construct library's
# errors, struct.error, a negative seek (ValueError), an index or key past a table's end, a None for a header.
PARSE_FAILURES = (ELFError, DWARFError, ConstructError, struct.error, ValueError, ArithmeticError, LookupError,
                  TypeError, AttributeError, AssertionError)  # fmt: skip


class NotAnElfError(LldbTraceError):
    """The file is not an ELF file (or not one we can use); ``reason`` is what pyelftools said, if it did."""

    def __init__(self, message, reason=None):
        super().__init__(message)
        self.reason = reason


class DamagedElfError(NotAnElfError):
    """An ELF file whose headers claim bytes it does not hold: a section or segment past its end."""


UNREADABLE_ELF = (OSError, NotAnElfError, *PARSE_FAILURES)  # all that reading a module file may raise


def checked_elf(file):
    """An ELFFile of the open binary ``file``, its headers checked first (raises DamagedElfError, see check_headers)."""
    elf = ELFFile(file)
    check_headers(elf, os.fstat(file.fileno()).st_size, file.name)
    return elf


class Segment(NamedTuple):
    """A PT_LOAD segment: where its bytes are in the file and where they load."""

    offset: int
    size: int
    vaddr: int
    executable: bool
    memory_size: int = 0
    writable: bool = False  # what the program may change: its bytes in the file are only where it started


class Section(NamedTuple):
    name: str
    address: int  # its file address (before relocation)
    size: int
    entry_size: int = 0


PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")  # where calls into other modules go through stubs


class ElfInfo:
    """The header facts, build id, PLT sections and symbols of one ELF file, read once."""

    def __init__(self, path):
        self.path = str(path)
        try:
            with open(path, "rb") as f:
                elf = checked_elf(f)
                self.machine = elf["e_machine"]
                self.type = elf["e_type"]
                self.entry = elf["e_entry"]
                self.program_headers = (elf["e_phoff"], elf["e_phnum"], elf["e_phentsize"])  # offset, count, size
                self.build_id = _build_id(elf)
                self.plt_sections = [
                    Section(s.name, s["sh_addr"], s["sh_size"], s["sh_entsize"])
                    for s in elf.iter_sections()
                    if s.name in PLT_SECTIONS
                ]
                self.segments = [
                    Segment(
                        s["p_offset"],
                        s["p_filesz"],
                        s["p_vaddr"],
                        bool(s["p_flags"] & 1),
                        s["p_memsz"],
                        bool(s["p_flags"] & 2),
                    )
                    for s in elf.iter_segments()
                    if s["p_type"] == "PT_LOAD"
                ]
                self.interpreter = next(
                    (s.get_interp_name() for s in elf.iter_segments() if s["p_type"] == "PT_INTERP"), None
                )  # the dynamic linker's path as the program names it
                self.dynamic_vaddr = next(
                    (s["p_vaddr"] for s in elf.iter_segments() if s["p_type"] == "PT_DYNAMIC"), None
                )
                self.first_load_vaddr = min(s.vaddr for s in self.segments) & ~0xFFF if self.segments else 0
                self.load_span = (
                    max((s.vaddr + s.memory_size for s in self.segments), default=0) - self.first_load_vaddr
                )
        except PARSE_FAILURES as error:
            raise _unreadable(path, error) from None

    @classmethod
    def read(cls, path):
        """The ElfInfo of ``path``, parsed once per version of the file: many processes load the same libraries.

        Raises NotAnElfError, or OSError when the file cannot be read.
        """
        status = os.stat(path)
        return _parsed(str(path), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)

    def load_bias(self, load_address):
        """Run-time address minus file address when the file's lowest page is at ``load_address``."""
        return load_address - self.first_load_vaddr

    def loaded_segments(self, load_address):
        """Segments with ``vaddr`` moved to where the file loads when its lowest page is at ``load_address``."""
        bias = self.load_bias(load_address)
        return [s._replace(vaddr=s.vaddr + bias) for s in self.segments]

    @property
    def is_x86_64(self):
        return self.machine == "EM_X86_64"

    @property
    def is_pie(self):
        return self.type == "ET_DYN"

    def require_x86_64(self):
        if not self.is_x86_64:
            raise NotAnElfError(f"{self.path} is not an x86-64 program (its machine is {self.machine})")

    @cached_property
    def symbols(self):
        """Function symbols by name (read on first use: large libraries have many)."""
        with open(self.path, "rb") as f:
            return _function_symbols(ELFFile(f))

    def symbol(self, name):
        """The file address of function symbol ``name``, or None."""
        return self.symbols.get(name)

    @lru_cache(maxsize=8)  # noqa: B019 (an ElfInfo is kept per file version: ElfInfo.read)
    def data_symbols(self, names):
        """``{name: file address}`` of the data symbols (STT_OBJECT) named in ``names`` (a tuple) that the file
        defines."""
        found = {}
        with open(self.path, "rb") as f:
            elf = ELFFile(f)
            for table in filter(None, (elf.get_section_by_name(name) for name in (".dynsym", ".symtab"))):
                for symbol in table.iter_symbols():
                    if symbol.name in names and symbol["st_info"]["type"] == "STT_OBJECT" and symbol["st_value"]:
                        found[symbol.name] = symbol["st_value"]
        return found


def _unreadable(path, error):
    """The NotAnElfError for what pyelftools raised reading ``path``."""
    with open(path, "rb") as file:
        what = "a damaged ELF file" if file.read(4) == b"\x7fELF" else "not an ELF file"
    reason = str(error) if isinstance(error, ELFError) else f"{type(error).__name__}: {error}"
    return NotAnElfError(f"{path} is {what} ({reason})", reason)


@lru_cache(maxsize=1024)
def _parsed(path, *_identity):
    return ElfInfo(path)


def check_headers(elf, file_size, path):
    """Raise DamagedElfError if a section or PT_LOAD segment of ``elf`` runs past the file's ``file_size`` bytes.

    (pyelftools itself refuses symbol and relocation tables whose entries have a size they cannot have,
    on which LLDB divides by zero.)
    """
    for section in elf.iter_sections():
        if section["sh_type"] not in ("SHT_NOBITS", "SHT_NULL"):
            _check_extent(path, f"section {section.name or '(unnamed)'}", section["sh_offset"], section["sh_size"],
                          file_size)  # fmt: skip
    for k, segment in enumerate(elf.iter_segments()):
        if segment["p_type"] == "PT_LOAD":
            _check_extent(path, f"segment {k} (PT_LOAD)", segment["p_offset"], segment["p_filesz"], file_size)


def _check_extent(path, what, offset, size, file_size):
    if offset + size > file_size:
        raise DamagedElfError(
            f"{path}: its {what} claims {size} bytes at offset {offset:#x}, past the end of the file "
            f"({file_size} bytes): the file is damaged"
        )


NT_GNU_BUILD_ID = 3


def _build_id(elf):
    """The GNU build-id note's bytes as hex, the notes read within their section's bytes (already checked against
    the file): a damaged note claiming gigabytes would have pyelftools read, and allocate, that much."""
    order = "<" if elf.little_endian else ">"
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        data, offset = section.data(), 0
        while offset + 12 <= len(data):
            name_size, desc_size, kind = struct.unpack_from(f"{order}III", data, offset)
            desc_at = offset + 12 + (name_size + 3) // 4 * 4
            end = desc_at + (desc_size + 3) // 4 * 4
            if end > len(data):
                break
            name = data[offset + 12 : offset + 12 + name_size].rstrip(b"\0")
            if kind == NT_GNU_BUILD_ID and name == b"GNU":  # SystemTap's notes use the same type number
                return data[desc_at : desc_at + desc_size].hex()
            offset = end
    return None


def _function_symbols(elf):
    symbols = {}
    for name in (".dynsym", ".symtab"):  # .symtab wins where both have a name
        table = elf.get_section_by_name(name)
        if table is None:
            continue
        for symbol in table.iter_symbols():
            if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_value"]:
                symbols[symbol.name] = symbol["st_value"]
    return symbols
