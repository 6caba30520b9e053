"""Where the PLT stubs are: calls through them are followed to the function they reach.

A call of a shared library's function goes to a stub in the caller's PLT
(``.plt``, ``.plt.sec`` or ``.plt.got``), which jumps through its GOT slot.
Once the slot is bound, the jump lands in the function.  The first call of a
lazily bound function lands back in the PLT instead: the stub's second half
pushes the relocation index and jumps to PLT0 (the first ``.plt`` entry),
whose jump enters ld.so's resolver.  The resolver calls ``_dl_fixup`` (a real
call, a child in the forest) and then jumps, indirectly, to the function.
The resolver is recognised by control flow (the target of PLT0's jump), not
by name: Debian's ld.so has no ``.symtab``.  forest_builder.py follows the
jumps; this module says where the sections are.
"""

from bisect import bisect_right

from ..elf_info import ElfInfo, NotAnElfError

PLT0_SIZE = 16


class PltSections:
    """The PLT sections of a process's modules at their run-time addresses."""

    def __init__(self, modules):
        ranges = []
        for module in modules:
            try:
                elf = ElfInfo.read(module.path)
            except (NotAnElfError, OSError):
                continue
            bias = elf.load_bias(module.load_address)
            for section in elf.plt_sections:
                start = section.address + bias
                # a lazily binding .plt has 16-byte entries, PLT0 first; a static program's has neither
                ranges.append((start, start + section.size, section.name == ".plt" and section.entry_size == PLT0_SIZE))
        ranges.sort()
        self._starts = [start for start, _, _ in ranges]
        self._ranges = ranges

    def _section_at(self, address):
        k = bisect_right(self._starts, address) - 1
        return self._ranges[k] if k >= 0 and address < self._ranges[k][1] else None

    def contains(self, address):
        return self._section_at(address) is not None

    def in_plt0(self, address):
        """Is ``address`` in PLT0, the first entry of a lazily binding ``.plt``, which enters ld.so's resolver?"""
        section = self._section_at(address)
        return section is not None and section[2] and address < section[0] + PLT0_SIZE

    def __bool__(self):
        return bool(self._ranges)
