"""The decode loop: libipt's block decoder over one thread's trace, into a DecodedThread.

The loop is the hot path of the whole plugin (millions of blocks).  Where the
package was built with a C compiler, block_loop.c runs it (compiled_loop.py):
libipt's pt_blk_next and the row lookup per block, all in C.  Otherwise a
Python loop does as little per block as it can: one ctypes call, and a copy of
the raw ``pt_block`` into a byte buffer added to the storage in batches.  Both
record every event at the item index where it occurs (the C loop itself records
the exec-mode event of every PSB and the timing updates; every other event
comes back here), and give the same storage.  Errors become gap items and
decoding resumes at the next PSB, as libipt allows, so one bad packet costs one
gap, not the rest of the trace.  A trace file that ends inside a packet ends
with a gap that says it was truncated (truncation.py).
"""

from .. import libipt, progress
from ..libipt import ErrorCode, EventType, LibiptError, StatusFlag
from ..libipt.config import BLOCK_ENABLE_TICK_EVENTS, BLOCK_END_ON_CALL
from . import compiled_loop
from .decoded_thread import CHECKPOINT_SPACING, FOLLOWED_CLASSES, DecodedPart
from .truncation import find_cut

DECODER_FLAGS = BLOCK_ENABLE_TICK_EVENTS | BLOCK_END_ON_CALL  # timestamps as events; calls end blocks
_BATCH = range(4096)  # blocks decoded between bookkeeping steps
_STALLED = -1001  # gap code: libipt walks code that needs no trace, forever
_PENDING = int(StatusFlag.EVENT_PENDING)
_LOST = "overflow: the trace lost the instructions that ran here"
_EOS = -int(ErrorCode.EOS)
_TIMING_ONLY = (EventType.TICK, EventType.CBR)


def decode_part(trace, cpu, image, expander=None, offset_base=0, finish=True, file_end=True, task=None):
    """Decode all of ``trace`` into one DecodedPart; gap offsets are reported plus ``offset_base``.

    ``task`` (a progress.Task) hears the trace offset reached (plus ``offset_base``) as decoding goes.

    With ``file_end``, the end of ``trace`` is the end of the thread's trace
    file, so a packet cut there marks the file truncated.  The ``expander``
    (the process's code) lets that drop what libipt walked past the last
    complete packet; without it the walked run is kept.
    """
    part = DecodedPart(offset_base)
    config = libipt.Config(trace, cpu, flags=DECODER_FLAGS)
    with libipt.BlockDecoder(config, image) as decoder:
        if compiled_loop.unavailable_reason() is None:
            blocks = compiled_loop.CompiledLoop(decoder, part, len(_BATCH), CHECKPOINT_SPACING, FOLLOWED_CLASSES)
            part.decode_loop = "compiled"
        else:
            blocks = _PythonLoop(decoder, part)
            part.decode_loop = "python"
        _decode_all(decoder, part, blocks, task or progress.QUIET, offset_base)
    cut = find_cut(trace) if file_end else None
    if cut is not None:
        part.end_truncated(cut, expander)
    if finish:
        part.finish()
    return part


def _decode_all(decoder, decoded, blocks, task, offset_base):
    """Decode with ``blocks`` (a loop over pt_blk_next) until the trace ends; errors, events and syncs here."""
    status = _sync(decoder, decoded)
    while status is not None:
        status = blocks.run(status)
        task.at(offset_base + decoder.offset)
        if blocks.stalled:
            text = "the code runs on without branches: no further trace to read"
            decoded.add_gap(_STALLED, text, decoder.offset)
            return
        held = blocks.held_event
        if blocks.event_failed:
            status = _event_failed(decoder, decoded, LibiptError(status, "pt_blk_event"))
        elif held is not None:
            _record(decoder, decoded, held)
            status = _take_events(decoder, decoded, status)
        elif status < 0:
            if status == _EOS:
                return
            error = LibiptError(status, "pt_blk_next")
            missing_ip = decoder.raw_item.ip if error.code == ErrorCode.NOMAP else None
            decoded.add_gap(error.code, error.text, decoder.offset, missing_ip)
            status = _sync(decoder, decoded)
        elif status & _PENDING:
            status = _take_events(decoder, decoded, status)


class _PythonLoop:
    """pt_blk_next through ctypes, a batch of blocks at a time: the loop where block_loop.c was not built.

    ``run(status)`` returns at a pending event, an error or after a whole batch,
    then adds the batch's blocks to the part; ``stalled`` is set when a whole
    batch read no trace (a branchless loop never needs any: it would never end).
    """

    def __init__(self, decoder, part):
        self.decoder, self.part = decoder, part
        self._next = decoder.unchecked_next()
        self._block = memoryview(decoder.raw_item).cast("B")
        self._pending = bytearray()
        self._offset = None  # the decoder's offset after the last whole batch
        self.stalled = False
        self.held_event, self.event_failed = None, False  # this loop takes no events: _take_events does

    def run(self, status):
        next_block, block, pending = self._next, self._block, self._pending
        for _ in _BATCH:
            if status & _PENDING or status < 0:
                break
            status = next_block()
            pending += block
        self.part.add_raw_blocks(pending)
        pending.clear()
        if status >= 0 and not status & _PENDING:  # a whole batch: make sure the decoder still reads trace
            offset = self.decoder.offset
            self.stalled = offset == self._offset
            self._offset = offset
        return status


def _take_events(decoder, decoded, status):
    """Record every pending event; returns the new status, or None when the trace ended."""
    while status & _PENDING:
        try:
            status, event = decoder.event()
        except LibiptError as error:
            return _event_failed(decoder, decoded, error)
        _record(decoder, decoded, event)
    return status


def _record(decoder, decoded, event):
    if event.tsc is not None:
        decoded.add_timestamp(event.tsc)
    if event.type in _TIMING_ONLY:
        return  # a timing update only: it lives in the timestamp table (libipt keeps the core:bus ratio)
    decoded.add_event(event.type, _event_ip(event))
    if event.type == EventType.OVERFLOW:
        # Instructions were lost here: a gap item, as native LLDB shows it, not only an event.
        decoded.add_gap(ErrorCode.OVERFLOW, _LOST, decoder.offset)


def _event_failed(decoder, decoded, error):
    """A gap where an event could not be read, then on from the next PSB (None: the trace ended)."""
    decoded.add_gap(error.code, error.text, decoder.offset)
    return _sync(decoder, decoded)


def _event_ip(event):
    if event.type == EventType.ASYNC_DISABLED:
        return event.data.get("at")
    return event.data.get("ip")


def _sync(decoder, decoded):
    """Synchronize onto the next PSB; None at the end of the trace.

    libipt searches from after the previous sync point, so every attempt moves
    forward; the offset check only guards against a library that would not.
    """
    failed_at = None
    while True:
        try:
            return decoder.sync_forward()
        except LibiptError as error:
            if error.code == ErrorCode.EOS or decoder.offset == failed_at:
                return None
            failed_at = decoder.offset
            decoded.add_gap(error.code, error.text, failed_at)
