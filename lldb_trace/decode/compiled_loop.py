"""The compiled decode loop (block_loop.c), loaded with ctypes, and its glue to a DecodedPart.

setup.py builds block_loop.c at install as an optional extension, next to this
file under the name setuptools gives extensions; it is loaded as a plain
shared library, not imported.  Where it was not built (no C compiler), was
built from another version of block_loop.c, or ``LLDB_TRACE_DECODE_LOOP=python``
asks for it, decode_loop.py runs its Python loop instead, with the same result.
"""

import ctypes
import functools
import importlib.machinery
import os
import weakref
from ctypes import POINTER, c_int, c_int32, c_uint32, c_uint64, c_void_p
from pathlib import Path

import numpy as np

from ..libipt import events
from ..libipt.native import lib
from ..libipt.structs import pt_block, pt_event

ENVIRONMENT = "LLDB_TRACE_DECODE_LOOP"  # "python": use the Python loop even where the compiled one exists
LIBRARY_NAME = "_block_loop"  # setup.py's extension lldb_trace.decode._block_loop
_ABI = 4  # LT_ABI in block_loop.c
_FAILED = -1000000  # LT_FAILED: the row table could not grow
_OUTPUT_BATCHES = 16  # batches of blocks the output arrays hold: the loop returns to Python at most this often


class _Run(ctypes.Structure):
    """``struct lt_run``: one call's outputs and the part's counts (see block_loop.c)."""

    _fields_ = [
        ("capacity", c_uint64),
        ("sequence", c_void_p),
        ("row_ips", c_void_p),
        ("row_sizes", c_void_p),
        ("row_classes", c_void_p),
        ("checkpoints", c_void_p),
        ("followed_classes", c_uint32),
        ("spacing", c_uint32),
        ("batch", c_uint32),
        ("stalled", c_int32),
        ("items", c_uint64),
        ("ordinal", c_uint64),
        ("rows", c_uint64),
        ("stalled_at", c_uint64),
        ("has_stalled_at", c_int32),
        ("has_last_end", c_int32),
        ("last_end", c_uint64),
        ("written", c_uint64),
        ("new_rows", c_uint64),
        ("new_checkpoints", c_uint64),
        ("event_items", c_void_p),
        ("event_ips", c_void_p),
        ("new_events", c_uint64),
        ("held", c_int32),
        ("event_failed", c_int32),
        ("tsc_items", c_void_p),
        ("tsc_values", c_void_p),
        ("new_tsc", c_uint64),
        ("tsc_count", c_uint64),
        ("tsc_last_item", c_uint64),
        ("tsc_last_value", c_uint64),
        ("tsc_replaced_value", c_uint64),
        ("tsc_replaced", c_int32),
        ("padding", c_int32),
    ]


def _layout():
    """What ``lt_layout`` reports for a library built from this version of block_loop.c."""
    return (
        _ABI, ctypes.sizeof(pt_block), pt_block.end_ip.offset, pt_block.iclass.offset, pt_block.ninsn.offset,
        pt_block.flags.offset, ctypes.sizeof(_Run), _Run.padding.offset, ctypes.sizeof(pt_event),
        pt_event.tsc.offset, pt_event.variant.offset + 8,
    )  # fmt: skip


def library_path(name=LIBRARY_NAME):
    """The library setup.py built as the extension ``lldb_trace.decode.NAME``, or None."""
    folder = Path(__file__).resolve().parent
    paths = (folder / (name + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES)
    return next((path for path in paths if path.is_file()), None)


def python_asked():
    """Whether ``LLDB_TRACE_DECODE_LOOP=python`` asks for the Python code (of the decode loop and the forest)."""
    return os.environ.get(ENVIRONMENT, "").strip().lower() == "python"


@functools.cache
def _library():
    """``(the loaded library, None)``, or ``(None, why there is none)``."""
    path = library_path()
    if path is None:
        return None, "it was not built when the package was installed (no C compiler?)"
    try:
        library = ctypes.CDLL(str(path))
        facts = (c_uint64 * 11)()
        library.lt_layout(facts)
    except (OSError, AttributeError) as error:
        return None, f"{path.name} does not load: {error}"
    if tuple(facts) != _layout():
        return None, f"{path.name} was built from another version of block_loop.c: reinstall lldb-trace"
    library.lt_table_new.restype = c_void_p
    library.lt_table_new.argtypes = []
    library.lt_table_free.restype = None
    library.lt_table_free.argtypes = [c_void_p]
    library.lt_decode.restype = c_int
    library.lt_decode.argtypes = [c_void_p] * 7 + [POINTER(_Run), c_int]
    return library, None


def unavailable_reason():
    """Why decoding uses the Python loop; None when it uses the compiled one."""
    if python_asked():
        return f"{ENVIRONMENT}=python"
    return _library()[1]


def _address(function):
    return ctypes.cast(function, c_void_p).value


class CompiledLoop:
    """Decodes blocks into ``part`` in C; the same steps as decode_loop's Python loop, ``batch`` calls at a time.

    ``run(status)`` returns at an error (its block stays in the decoder's
    ``raw_item``), a full output, or a pending event other than the exec-mode
    one libipt reports at every PSB and the timing updates (those are recorded
    in C, with their time stamps), with libipt's last status.  After it,
    ``held_event`` is an event C took but left to Python to record,
    ``event_failed`` says that taking one failed (the status is the error), and
    ``stalled`` that a whole batch read no trace.  The (ip, size) -> row table
    lives in C for the loop's life.
    """

    def __init__(self, decoder, part, batch, spacing, followed_classes):
        library = _library()[0]
        table = library.lt_table_new()
        if not table:
            raise MemoryError("the compiled decode loop could not allocate its row table")
        weakref.finalize(self, library.lt_table_free, table)
        self.part = part
        capacity = batch * _OUTPUT_BATCHES
        self._sequence = np.empty(capacity, np.uint32)
        self._ips = np.empty(capacity, np.uint64)
        self._sizes = np.empty(capacity, np.uint16)
        self._classes = np.empty(capacity, np.uint8)
        self._checkpoints = np.empty(capacity, np.uint64)
        self._event_items = np.empty(capacity, np.uint64)
        self._event_ips = np.empty(capacity, np.uint64)
        self._tsc_items = np.empty(capacity, np.uint64)
        self._tsc_values = np.empty(capacity, np.uint64)
        self._event = pt_event()
        run = self._run = _Run(
            capacity=capacity, sequence=self._sequence.ctypes.data, row_ips=self._ips.ctypes.data,
            row_sizes=self._sizes.ctypes.data, row_classes=self._classes.ctypes.data,
            checkpoints=self._checkpoints.ctypes.data, followed_classes=sum(1 << int(c) for c in followed_classes),
            spacing=spacing, batch=batch, event_items=self._event_items.ctypes.data,
            event_ips=self._event_ips.ctypes.data,
            tsc_items=self._tsc_items.ctypes.data, tsc_values=self._tsc_values.ctypes.data,
        )  # fmt: skip
        libipt = lib()
        self._decode = functools.partial(
            library.lt_decode, table, _address(libipt.pt_blk_next), _address(libipt.pt_blk_get_offset),
            _address(libipt.pt_blk_event), decoder.handle, ctypes.addressof(decoder.raw_item),
            ctypes.addressof(self._event), ctypes.byref(run),
        )  # fmt: skip

    @property
    def stalled(self):
        return bool(self._run.stalled)

    @property
    def held_event(self):
        return events.from_c(self._event) if self._run.held else None

    @property
    def event_failed(self):
        return bool(self._run.event_failed)

    def run(self, status):
        part, run = self.part, self._run
        run.items, run.ordinal, run.rows = part.item_count, len(part.block_sequence), len(part.block_ips)
        run.tsc_count = len(part.tsc_items)
        if run.tsc_count:
            run.tsc_last_item, run.tsc_last_value = part.tsc_items[-1], part.tsc_values[-1]
        status = self._decode(status)
        if status == _FAILED:
            raise MemoryError("the compiled decode loop could not grow its row table")
        rows = run.new_rows
        part.add_rows_and_blocks(
            (self._ips[:rows], self._sizes[:rows], self._classes[:rows]),
            self._sequence[: run.written],
            self._checkpoints[: run.new_checkpoints],
            run.items,
            run.last_end if run.has_last_end else None,
        )
        if run.new_events:
            part.add_exec_modes(self._event_items[: run.new_events], self._event_ips[: run.new_events])
        if run.tsc_replaced:
            part.tsc_values[-1] = run.tsc_replaced_value
        if run.new_tsc:
            part.add_timestamps(self._tsc_items[: run.new_tsc], self._tsc_values[: run.new_tsc])
        return status
