"""Where each function begins and ends, from the unwind tables every x86-64 binary carries.

The call forest needs this to follow control flow that is not a plain call
and return: a jump into another function's first instruction is a tail call,
and a return or jump that lands inside an open caller (longjmp, a caught C++
exception) ends the frames in between.  Symbol tables are often stripped
(Debian's libc has only its exported names), but ``.eh_frame`` describes
every compiled function: its ``.eh_frame_hdr`` holds a table of
``(function start, FDE)`` sorted by start, and each FDE gives the function's
length.  One binary search and a few bytes per lookup, instead of parsing all
unwind information (plain Python, no ``lldb``).
"""

import struct
from bisect import bisect_right

from elftools.elf.elffile import ELFFile

from ..elf_info import PARSE_FAILURES

# DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, the high one what it is relative to.
_FORMATS = {0x01: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x09: "<q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}
_PCREL, _DATAREL, _OMIT = 0x10, 0x30, 0xFF


class FunctionRanges:
    """``containing(address) -> (start, end)`` of the function around a run-time address, for a process's modules."""

    def __init__(self, modules):
        self._modules = sorted(modules, key=lambda module: module.load_address)
        self._loaded = {}  # module path -> _ModuleRanges (None when it has no usable table)
        self._cache = {}

    def containing(self, address):
        """The function's ``(start, end)`` around ``address`` at run time, or None where no unwind entry covers it."""
        found = self._cache.get(address, ())
        if found == ():
            found = self._cache[address] = self._lookup(address)
        return found

    def _lookup(self, address):
        for module in self._modules:
            for segment in module.segments:
                if segment.executable and segment.vaddr <= address < segment.vaddr + segment.memory_size:
                    ranges = self._ranges_of(module)
                    if ranges is None:
                        return None
                    try:
                        found = ranges.containing(address - ranges.bias)
                    except PARSE_FAILURES:  # a damaged FDE: no extent to trust for this function
                        return None
                    return None if found is None else (found[0] + ranges.bias, found[1] + ranges.bias)
        return None

    def _ranges_of(self, module):
        key = str(module.path)
        if key not in self._loaded:
            try:
                self._loaded[key] = _ModuleRanges.read(module)
            except (OSError, *PARSE_FAILURES):
                self._loaded[key] = None  # no unwind table to trust: no function extents here
        return self._loaded[key]


class _ModuleRanges:
    """One module's ``.eh_frame_hdr`` table, at file addresses; ``bias`` turns them into run-time ones."""

    def __init__(self, starts, fdes, eh_frame, bias):
        self.starts, self.fdes, self.eh_frame, self.bias = starts, fdes, eh_frame, bias
        self._ends = {}

    @classmethod
    def read(cls, module):
        with open(module.path, "rb") as f:
            elf = ELFFile(f)
            header = elf.get_section_by_name(".eh_frame_hdr")
            frames = elf.get_section_by_name(".eh_frame")
            if frames is None:
                return None
            eh_frame = (frames["sh_addr"], frames.data())
            # Static links often carry no .eh_frame_hdr: then the FDEs are read from .eh_frame itself.
            table = _search_table(header.data(), header["sh_addr"]) if header is not None else _scan(eh_frame)
            first_vaddr = min((s["p_vaddr"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"), default=0)
        starts = [start for start, _ in table]
        fdes = [fde for _, fde in table]
        return cls(starts, fdes, eh_frame, module.load_address - (first_vaddr & ~0xFFF))

    def containing(self, file_address):
        k = bisect_right(self.starts, file_address) - 1
        if k < 0:
            return None
        start = self.starts[k]
        end = self._ends.get(k)
        if end is None:
            end = self._ends[k] = start + _fde_length(self.eh_frame, self.fdes[k])
        return (start, end) if file_address < end else None


def _search_table(data, header_address):
    """The sorted ``(function start, FDE address)`` pairs of an ``.eh_frame_hdr`` (file addresses)."""
    version, frame_pointer_encoding, count_encoding, table_encoding = data[:4]
    if version != 1 or count_encoding == _OMIT or table_encoding == _OMIT:
        raise ValueError("no binary search table in .eh_frame_hdr")
    offset = 4
    _, offset = _read_encoded(data, offset, frame_pointer_encoding, header_address)
    count, offset = _read_encoded(data, offset, count_encoding, header_address)
    entry_format = _FORMATS[table_encoding & 0x0F]
    size = struct.calcsize(entry_format)
    base = header_address if table_encoding & 0x70 == _DATAREL else 0
    values = struct.unpack_from(f"<{2 * count}{entry_format[1]}", data, offset)
    return [(base + values[2 * k], base + values[2 * k + 1]) for k in range(count)] if size else []


def _scan(eh_frame):
    """The sorted ``(function start, FDE address)`` pairs of every FDE in ``.eh_frame`` (file addresses)."""
    frames_address, frames = eh_frame
    table, offset = [], 0
    while offset + 4 <= len(frames):
        (length,) = struct.unpack_from("<I", frames, offset)
        if length == 0:
            break  # the terminator
        header = 12 if length == 0xFFFFFFFF else 4
        if header == 12:
            (length,) = struct.unpack_from("<Q", frames, offset + 4)
        id_at = offset + header
        (cie_pointer,) = struct.unpack_from("<I", frames, id_at)
        if cie_pointer:  # an FDE (a CIE has id 0)
            encoding = _fde_encoding(frames, id_at - cie_pointer)
            start, _ = _read_encoded(frames, id_at + 4, encoding, frames_address)
            table.append((start & 0xFFFFFFFFFFFFFFFF, frames_address + offset))
        offset = id_at + length
    return sorted(table)


def _read_encoded(data, offset, encoding, section_address):
    """A pointer encoded with ``encoding`` at ``data[offset]``: ``(value, offset after it)``."""
    entry_format = _FORMATS[encoding & 0x0F]
    (value,) = struct.unpack_from(entry_format, data, offset)
    relative = encoding & 0x70
    if relative == _PCREL:
        value += section_address + offset
    elif relative == _DATAREL:
        value += section_address
    return value, offset + struct.calcsize(entry_format)


def _fde_length(eh_frame, fde_address):
    """The ``pc_range`` of the FDE at ``fde_address``: how many bytes of code it covers."""
    frames_address, frames = eh_frame
    offset = fde_address - frames_address
    (length,) = struct.unpack_from("<I", frames, offset)
    header = 12 if length == 0xFFFFFFFF else 4  # a 64-bit length follows the escape
    cie_pointer_at = offset + header
    (cie_pointer,) = struct.unpack_from("<I", frames, cie_pointer_at)
    encoding = _fde_encoding(frames, cie_pointer_at - cie_pointer)
    # pc_begin comes first, in the CIE's encoding; pc_range follows in the same format, never relative.
    format_ = _FORMATS[encoding & 0x0F]
    (pc_range,) = struct.unpack_from(format_, frames, cie_pointer_at + 4 + struct.calcsize(format_))
    return pc_range


def _fde_encoding(frames, cie_offset):
    """The pointer encoding a CIE's augmentation ('zR...') gives its FDEs (absolute 8-byte without one)."""
    (length,) = struct.unpack_from("<I", frames, cie_offset)
    offset = cie_offset + (12 if length == 0xFFFFFFFF else 4) + 4 + 1  # length, CIE id, version
    end = frames.index(b"\0", offset)
    augmentation = frames[offset:end].decode("ascii", "replace")
    offset = end + 1
    for _ in range(2):  # code alignment (ULEB128), data alignment (SLEB128)
        offset = _skip_leb128(frames, offset)
    offset = _skip_leb128(frames, offset)  # the return address register (ULEB128 in version 3, a byte before)
    if not augmentation.startswith("z"):
        return 0x04
    offset = _skip_leb128(frames, offset)  # the augmentation data's length
    for letter in augmentation[1:]:
        if letter == "R":
            return frames[offset]
        if letter == "P":
            offset += 1 + struct.calcsize(_FORMATS[frames[offset] & 0x0F])
        elif letter == "L":
            offset += 1
    return 0x04


def _skip_leb128(data, offset):
    while data[offset] & 0x80:
        offset += 1
    return offset + 1
