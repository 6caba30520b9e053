"""forest_runs.c through ctypes: the call forest's loops over millions of blocks, in C instead of numpy passes.

setup.py builds it at install as an optional extension, next to this file under the name setuptools
gives extensions; it is loaded as a plain shared library, not imported.  Where it was not built (no C
compiler), was built from another version of forest_runs.c, or ``LLDB_TRACE_DECODE_LOOP=python`` asks
for the Python code (the decode loop's switch, compiled_loop.python_asked), branches.py and regular_runs.py run
their numpy code instead, with the same results.
"""

import ctypes
import functools

import numpy as np

from .compiled_loop import library_path, python_asked

LIBRARY_NAME = "_forest_runs"  # setup.py's extension lldb_trace.decode._forest_runs
_ABI = 1  # FOREST_RUNS_ABI in forest_runs.c
_pointer, _int = ctypes.c_void_p, ctypes.c_int64


class _Columns(ctypes.Structure):
    """``struct forest_columns``."""

    _fields_ = [("sequence", _pointer), ("sequence_wide", _int), ("count", _int)]
    _fields_ += [(name, _pointer) for name in ("classes", "gaps", "ends", "tail", "stub", "returns", "ips")]
    _fields_ += [("ordinals", _pointer), ("ordinals_wide", _int)]


class _Calls(ctypes.Structure):
    """``struct forest_calls``."""

    _fields_ = [("calls", _pointer), ("first", _pointer), ("last", _pointer), ("items_wide", _int)]
    _fields_ += [(name, _pointer) for name in ("levels", "parents", "entries", "bounds")] + [("bound_count", _int)]


_CHUNK = (ctypes.POINTER(_Columns), _int, _int, _pointer)  # columns, low, high, irregular
_SIGNATURES = {
    "forest_branches": (_pointer, _int, _int, _int, _pointer, _pointer, _pointer, _int, *[_pointer] * 5, _int),
    "forest_runs_mark": (*_CHUNK, _pointer),
    "forest_runs_walk": (*_CHUNK, ctypes.POINTER(_Calls)),
}


def library():
    """The loaded library, or None: not built, stale, or the Python code asked for."""
    if python_asked():
        return None
    return _load()


@functools.cache
def _load():
    path = library_path(LIBRARY_NAME)
    if path is None:
        return None
    try:
        found = ctypes.CDLL(str(path))
        facts = (_int * 3)()
        found.forest_runs_layout(facts)
    except (OSError, AttributeError):
        return None
    if tuple(facts) != (_ABI, ctypes.sizeof(_Columns), ctypes.sizeof(_Calls)):
        return None  # built from another version of forest_runs.c
    for name, arguments in _SIGNATURES.items():
        getattr(found, name).argtypes, getattr(found, name).restype = arguments, _int
    return found


class Scratch:
    """Memory lent to one slice's columns, or one chunk's runs, at a time: the next borrower of a name gets it.

    Fresh arrays each time would fault in every page afresh (the allocator hands freed megabytes back to the
    system), which costs as much as the C code itself.  A borrower's arrays are overwritten by the next one's.
    """

    def __init__(self):
        self._arrays = {}

    def take(self, name, size, dtype):
        found = self._arrays.get(name)
        if found is None or found.dtype != dtype or len(found) < size:
            found = self._arrays[name] = np.empty(size, dtype=dtype)
        return found[:size]


def branch_columns(found, part, sequence, base, tail_rows, slice_size, ordinal_type, scratch):
    """``(sizes, gaps, ends, classes, ordinals)``: the columns of PartBranches for ``sequence`` (ordinals of
    ``part``'s block sequence), whose first item is ``base``; ordinals only among the first ``slice_size``."""
    count, take = len(sequence), scratch.take
    tail = take("tail", len(part.block_ips), bool)
    tail[:] = False
    tail[list(tail_rows)] = True
    sizes, gaps, ends = take("sizes", count, np.uint16), take("gaps", count, bool), take("ends", count, np.int64)
    classes, ordinals = take("classes", count, np.uint8), take("ordinals", slice_size, ordinal_type)
    rows = (np.frombuffer(part.block_sizes, dtype=np.uint16), np.frombuffer(part.row_classes, dtype=np.uint8), tail)
    made = found.forest_branches(
        _address(sequence), sequence.itemsize == 4, count, slice_size, *map(_address, rows), base,
        *map(_address, (sizes, gaps, ends, classes, ordinals)), ordinals.itemsize == 8,
    )  # fmt: skip
    return sizes, gaps, ends, classes, ordinals[:made]


class Walk:
    """The columns of one slice (``branches``, a PartBranches) and its part's ``rows`` (a PartRows), for the C code;
    what it finds is in ``scratch``, until the next chunk's walk."""

    def __init__(self, found, branches, rows, scratch):
        self.found, self.scratch = found, scratch
        columns = (branches.classes, branches.gaps, branches.ends, rows.tail, rows.stub, rows.returns, rows.ips)
        self.columns = _Columns(
            _address(branches.sequence), branches.sequence.itemsize == 4, branches.count, *map(_address, columns),
            _address(branches.ordinals), branches.ordinals.itemsize == 8,
        )  # fmt: skip
        self.arrays = (branches, rows)  # kept alive while the addresses are in use

    def mark(self, low, high, irregular):
        """Mark branches ``low``..``high`` irregular for their blocks (``irregular``: flags from ``low``, updated);
        the positions (from ``low``) of the jumps still regular, which only Python can judge."""
        jumps = self.scratch.take("jumps", high - low, np.int64)
        return jumps[: self.found.forest_runs_mark(self.columns, low, high, _address(irregular), _address(jumps))]

    def walk(self, low, high, irregular, items):
        """``(bounds, calls, first, last, levels, parents, entries)`` of the runs among branches ``low``..``high``,
        numbered from ``low`` (bounds: an array of ``(start, stop)`` rows; first and last of dtype ``items``), as
        regular_runs.py's numpy code finds them."""
        size, take = high - low, self.scratch.take
        calls, first, last = take("calls", size, np.int64), take("first", size, items), take("last", size, items)
        levels, parents = take("levels", size, np.int32), take("parents", size, np.int32)
        entries = take("entries", size, np.uint64)
        bounds = take("bounds", size + 1, np.int64)  # a run is at least one branch, and two runs are apart
        found = (calls, first, last, levels, parents, entries)
        out = _Calls(*map(_address, found[:3]), first.itemsize == 8, *map(_address, (*found[3:], bounds)), 0)
        made = self.found.forest_runs_walk(self.columns, low, high, _address(irregular), out)
        return (bounds[: 2 * out.bound_count].reshape(-1, 2), *(column[:made] for column in found))


def _address(values):
    """The address of a contiguous numpy array's data."""
    assert values.flags.c_contiguous
    return values.ctypes.data
