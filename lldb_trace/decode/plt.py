"""Calls through PLT stubs: which function each one reached.

A call of a shared library's function goes to a stub in the caller's PLT
(``.plt``, ``.plt.sec`` or ``.plt.got``), which jumps through its GOT slot.
Once the slot is bound, the jump lands in the function.  The first call of a
lazily bound function lands back in the PLT instead: the stub's second half
pushes the relocation index and jumps to PLT0 (the first ``.plt`` entry),
whose jump enters ld.so's resolver.  The resolver calls ``_dl_fixup`` (a real
call, a child in the forest) and then jumps, indirectly, to the function.
The resolver is recognised by control flow (the target of PLT0's jump), not
by name: Debian's ld.so has no ``.symtab``.

Every step ends a libipt block (an indirect jump, a call), so following a
call's first few blocks finds the function without expanding anything else.
"""

from bisect import bisect_left, bisect_right
from itertools import islice

from ..elf_info import ElfInfo, NotAnElfError
from ..x86.instructions import Transfer
from .cursor import runs

PLT0_SIZE = 16
MAX_RUNS = 64  # a stub and the resolver take a handful; more means the trace shows something else


class PltSections:
    """The PLT sections of a process's modules at their run-time addresses."""

    def __init__(self, modules):
        ranges = []
        for module in modules:
            try:
                elf = ElfInfo(module.path)
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


def reached_function(call, decoded, expander, plt, at=None):
    """``(address, bound lazily)`` of the function a call that starts in a PLT stub reached, or None.

    None when the trace does not show it: a gap, or the end of the call or of
    the trace, before the stub's jumps are done.  ``at`` (``(part number,
    entry position, first item of the entry)`` of the call's first item) lets
    a bound stub be read off the next entry, the common case.
    """
    bound = _bound_target(call, decoded, plt, at) if at is not None else None
    if bound is not None:
        return bound, False
    lazy = in_resolver = jumped = False
    for _index, addresses, calls_out in islice(_own_runs(call, decoded, expander), MAX_RUNS):
        if addresses is None:
            return None
        if jumped:
            return addresses[0], True
        if not in_resolver:
            if plt.contains(addresses[0]):
                lazy = lazy or plt.in_plt0(addresses[-1])
                continue
            if not lazy:
                return addresses[0], False
            in_resolver = True  # PLT0 jumped here: ld.so's resolver
        jumped = not calls_out and expander.classifier[addresses[-1]].transfer == Transfer.INDIRECT
    return None


def _bound_target(call, decoded, plt, at):
    """The function a bound stub jumped to: the next entry, when it starts outside the PLT within the call."""
    k, position, first = at
    part, start = decoded.parts[k], decoded.part_starts[k]
    entries, sizes = part.entries, part.block_sizes
    if start + first != call.first or position + 1 >= len(entries):
        return None
    size = sizes[entries[position]]
    following = entries[position + 1]
    if not size or not sizes[following] or start + first + size > call.last:
        return None
    target = part.block_ips[following]
    return None if plt.contains(target) else target


def _own_runs(call, decoded, expander):
    """``(index, addresses or None for a gap, a callee follows)`` of the call's own runs, its callees skipped."""
    start = call.first
    while start <= call.last:
        for index, addresses in runs(decoded, start, expander):
            if index > call.last:
                return
            if not isinstance(addresses, tuple):
                yield index, None, False
                return
            child = _child_starting_at(call, index + len(addresses))
            yield index, addresses, child is not None
            if child is not None:
                start = child.last + 1
                break
        else:
            return


def _child_starting_at(call, index):
    children = call.children
    k = bisect_left(children, index, key=lambda child: child.first)
    return children[k] if k < len(children) and children[k].first == index else None
