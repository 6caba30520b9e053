"""A trace file mapped into memory, not read: with a readable page after its end, and no descriptor kept.

A gigabyte trace is decoded where it is needed, so it is mapped rather than
read.  Python's ``mmap`` keeps a duplicate of the file descriptor for as long
as the mapping lives, so a bundle of a thousand threads would hit the usual
limit of 1,024 open files; and a file of a page-multiple size ends exactly
where the next page may be unmapped, while libipt 2.0.5 reads the byte after
a buffer that ends in a PSB (see libipt/config.py).  So the file is mapped
over an anonymous region one page longer: the page after it reads as zeros,
and the descriptor is closed as soon as the mapping exists.  The anonymous
region (a Python ``mmap``) owns the whole range and unmaps it when the last
view of it goes.

Only the file's data is mapped: its large holes (a sparse file's, as a
damaged or hostile trace of gigabytes of zeros may be) stay the anonymous
region's pages, which read as zeros from the kernel's one zero page.  Read
through the file, every page of zeros would count in the process's memory.
"""

import ctypes
import errno
import mmap
import os

_MAP_NORESERVE = 0x4000  # no swap is reserved for what is only read (a 20 GB file must still map)
_MAP_FIXED = 0x10
_PROT = mmap.PROT_READ | mmap.PROT_WRITE  # private: writable pages are the process's own copies (libipt never writes)
_SMALLEST_HOLE = 1 << 20  # smaller holes are mapped through: fewer mappings
_MOST_EXTENTS = 4096  # a file more fragmented than this is mapped whole (the kernel limits mappings per process)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_MAP_FAILED = ctypes.c_void_p(-1).value


def map_file(path: str | os.PathLike) -> bytes | memoryview:
    """The bytes of the file at ``path`` as a writable memoryview over a private mapping (b"" when empty).

    Raises OSError when the file cannot be opened or mapped.
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if not size:
            return b""
        region = mmap.mmap(-1, size + mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | _MAP_NORESERVE, prot=_PROT)
        start = ctypes.addressof(ctypes.c_char.from_buffer(region))
        flags = mmap.MAP_PRIVATE | _MAP_FIXED | _MAP_NORESERVE
        for offset, length in _data_extents(file.fileno(), size):
            if _libc.mmap(start + offset, length, _PROT, flags, file.fileno(), offset) == _MAP_FAILED:
                code = ctypes.get_errno()
                region.close()
                raise OSError(code, os.strerror(code), str(path))
    return memoryview(region)[:size]


def _data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """``[(offset, length)]`` covering the file's data, page-aligned, holes of _SMALLEST_HOLE or more left out."""
    page, whole = mmap.PAGESIZE, [(0, size)]
    extents: list[tuple[int, int]] = []
    offset = 0
    while offset < size:
        try:
            data = os.lseek(fd, offset, os.SEEK_DATA)
            hole = os.lseek(fd, data, os.SEEK_HOLE)
        except OSError as error:
            if error.errno == errno.ENXIO:  # no data after ``offset``
                break
            return whole  # the file system cannot tell
        data, hole = data // page * page, min(-(-hole // page) * page, size)
        if extents and data - sum(extents[-1]) < _SMALLEST_HOLE:
            extents[-1] = (extents[-1][0], hole - extents[-1][0])
        else:
            extents.append((data, hole - data))
        if len(extents) > _MOST_EXTENTS:
            return whole
        offset = hole
    return extents
