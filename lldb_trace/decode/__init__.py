"""Decoding a thread's trace into compact storage, and reading it back (plain Python, no ``lldb``)."""

import time

from .. import progress
from .decode_loop import decode_part
from .decoded_thread import DecodedThread, EventRecord, Gap
from .expand import BlockExpander
from .images import process_image
from .module_bytes import ModuleBytes
from .parallel import PIECE_MIN_BYTES, decode_pieces

DATA_LOST = -1002  # the gap code where the trace does not continue (a break: data lost in recording)


def decode_thread_trace(trace, cpu, image, expander, workers=1, title="Decoding a trace", breaks=(), forest=None):
    """A DecodedThread of ``trace``: in pieces on ``workers`` processes when it is large enough to pay.

    ``breaks`` (with ``offset`` and ``reason``) are where the bytes stop continuing each other (trace lost
    while recording): each stretch between them is decoded on its own, and a gap item says what was lost.
    The decode is a progress task named ``title``; an interrupt raises WorkInterruptedError, keeping nothing.
    ``forest`` (a parallel.ForestMaker) has the pieces' call forests built where they are decoded.
    """
    started = time.perf_counter()
    with progress.task(title, len(trace)) as task:
        if breaks:
            parts = _decode_stretches(trace, cpu, image, expander, breaks, task)
        elif workers > 1 and len(trace) >= PIECE_MIN_BYTES:
            parts = decode_pieces(trace, cpu, image, expander, workers, task, forest)
        else:
            parts = [decode_part(trace, cpu, image, expander, task=task)]
    return DecodedThread(parts, time.perf_counter() - started)


def _decode_stretches(trace, cpu, image, expander, breaks, task):
    """One part per stretch between breaks; each part but the last ends with the gap of its break."""
    view = memoryview(trace)
    bounds = [0, *(b.offset for b in breaks), len(trace)]
    parts = []
    for k in range(len(bounds) - 1):
        start, end = bounds[k], bounds[k + 1]
        last = k == len(bounds) - 2
        part = decode_part(view[start:end], cpu, image, expander, start, False, last, task)
        if not last:
            part.add_gap(DATA_LOST, breaks[k].reason, end - start)
        part.finish()
        parts.append(part)
    return parts


__all__ = [
    "DATA_LOST",
    "BlockExpander",
    "DecodedThread",
    "EventRecord",
    "Gap",
    "ModuleBytes",
    "decode_thread_trace",
    "process_image",
]
