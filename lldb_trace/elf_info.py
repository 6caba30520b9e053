"""Facts about ELF files that several layers need (pyelftools underneath)."""

from functools import cached_property
from typing import NamedTuple

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .errors import LldbTraceError


class NotAnElfError(LldbTraceError):
    """The file is not an ELF file (or not one we can use)."""


class Segment(NamedTuple):
    """A PT_LOAD segment: where its bytes are in the file and where they load."""

    offset: int
    size: int
    vaddr: int
    executable: bool
    memory_size: int = 0


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
                elf = ELFFile(f)
                self.machine = elf["e_machine"]
                self.type = elf["e_type"]
                self.entry = elf["e_entry"]
                self.build_id = _build_id(elf)
                self.plt_sections = [
                    Section(s.name, s["sh_addr"], s["sh_size"], s["sh_entsize"])
                    for s in elf.iter_sections()
                    if s.name in PLT_SECTIONS
                ]
                self.segments = [
                    Segment(s["p_offset"], s["p_filesz"], s["p_vaddr"], bool(s["p_flags"] & 1), s["p_memsz"])
                    for s in elf.iter_segments()
                    if s["p_type"] == "PT_LOAD"
                ]
                self.first_load_vaddr = min(s.vaddr for s in self.segments) & ~0xFFF if self.segments else 0
                self.load_span = (
                    max((s.vaddr + s.memory_size for s in self.segments), default=0) - self.first_load_vaddr
                )
        except ELFError as error:
            raise NotAnElfError(f"{path} is not an ELF file ({error})") from None

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


def _build_id(elf):
    for section in elf.iter_sections():
        if section["sh_type"] == "SHT_NOTE":
            for note in section.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return note["n_desc"]
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
