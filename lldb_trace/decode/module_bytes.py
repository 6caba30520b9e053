"""The bytes of a traced process's modules (its code and constants), read from the module files at their
load addresses.

Both the decoder's block expansion and the post-mortem process's memory reads
need them.  Each module file is mapped once, on first use, not read (see
sources/mapped_file.py): a read touches only the pages it reads, so what it
costs stays bounded by what is read, whatever size a segment claims.  A segment's
part past its file bytes (``.bss``: a ``static char big[3 << 30]`` gives a
3 GiB one) reads as zeros and costs nothing.
"""

from bisect import bisect_right
from itertools import accumulate

from ..errors import LldbTraceError
from ..sources.mapped_file import map_file


class AddressTypeError(LldbTraceError):
    """An address that is not an int (an API caller passed a string or None)."""


class ModuleBytes:
    """Reads bytes of ``modules`` (bundle Modules, whose segments are at run-time addresses)."""

    def __init__(self, modules):
        self._segments = sorted(
            ((segment.vaddr, segment.vaddr + segment.memory_size, segment, module.path) for module in modules
             for segment in module.segments if segment.memory_size),
            key=lambda placed: placed[0],
        )  # fmt: skip
        self._starts = [placed[0] for placed in self._segments]
        self._reach = list(accumulate((placed[1] for placed in self._segments), max))  # the furthest end up to each
        self._files = {}  # path -> its mapped bytes

    def segment_at(self, address):
        """``(start, end, Segment, module path)`` of the segment holding ``address``, or None."""
        if not isinstance(address, int):
            raise AddressTypeError(f"an address is an int, not {type(address).__name__} ({address!r})")
        k = bisect_right(self._starts, address) - 1
        while k >= 0 and self._reach[k] > address:  # only overlapping segments (a hostile file's) walk back
            start, end, segment, path = self._segments[k]
            if address < end:
                return start, end, segment, path
            k -= 1
        return None

    def read(self, address, size):
        """Up to ``size`` bytes at ``address`` (fewer at a segment's end), or b"" outside every module."""
        found = self.segment_at(address)
        if found is None or size <= 0:
            return b""
        start, end, segment, path = found
        first, stop = address - start, min(end, address + size) - start  # offsets into the segment
        in_file = max(0, min(stop, segment.size) - first)
        if in_file:
            at = segment.offset + first
            data = bytes(self._file(path)[at : at + in_file])
            if len(data) < in_file:
                return data  # the file is gone or shorter since it was loaded: there is no more to read
        else:
            data = b""
        return data + bytes(stop - first - in_file)  # past the file's bytes: .bss, zeros

    def read_unchanging(self, address, size):
        """What ``read`` gives, from read-only segments only: the code and constants a trace vouches for at
        every position.  A writable segment's file bytes (``.data``, ``.bss``, the GOT) are only what the
        program started with, not what it held at any point of its history: b"" there."""
        found = self.segment_at(address)
        return b"" if found is None or found[2].writable else self.read(address, size)

    def first_writable(self, start, end):
        """The first address of ``[start, end)`` in a writable segment (whose file bytes are no value of any
        position in the history), or None."""
        overlaps = (
            max(start, first)
            for first, last, segment, _ in self._segments
            if segment.writable and first < end and start < last
        )
        return min(overlaps, default=None)

    def _file(self, path):
        mapped = self._files.get(path)
        if mapped is None:
            try:
                mapped = map_file(path)
            except OSError:
                mapped = b""  # gone since the bundle was loaded: its code cannot be read (a decode error says so)
            self._files[path] = mapped
        return mapped
