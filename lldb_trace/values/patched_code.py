"""Code the program changed while it ran: pages of a module's read-only segments that a core holds other bytes of.

The recovery reads each instruction's bytes from the module files, the same
at every position.  A program that made its own text writable (``mprotect``)
and patched it (a hot patch, an instrumentation trampoline) ran other
instructions there than the file holds, and a core holds such a page whole
(the kernel dumps a private mapping once it was written to).  Where a known
state shows that, the page's instructions are not known: they cut what
carries, rather than compute with the file's bytes.  A patch undone before
the core is written leaves no sign.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .core_file import CoreFile

PAGE = 4096


def patched_pages(cores: Iterable[CoreFile], read_unchanging: Callable[[int, int], bytes]) -> frozenset[int]:
    """The page numbers whose bytes in one of ``cores`` differ from the module files' (``read_unchanging``)."""
    pages = set()
    for core in cores:
        for start, size in core.held_spans():
            for page in range(start // PAGE, -(-(start + size) // PAGE)):
                filed = read_unchanging(page * PAGE, PAGE)
                held = core.read(page * PAGE, len(filed)) if filed else b""
                if held and held != filed[: len(held)]:
                    pages.add(page)
    return frozenset(pages)


def without_pages(read_code: Callable[[int, int], bytes], pages: frozenset[int]) -> Callable[[int, int], bytes]:
    """``read_code`` giving no bytes that touch ``pages``."""
    if not pages:
        return read_code

    def read(address: int, size: int) -> bytes:
        touched = range(address // PAGE, (address + max(size, 1) - 1) // PAGE + 1)
        return b"" if any(page in pages for page in touched) else read_code(address, size)

    return read
