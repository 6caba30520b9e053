"""Decoding a thread's trace into compact storage, and reading it back (plain Python, no ``lldb``)."""

import time

from .. import progress
from .code_memory import CodeMemory
from .decode_loop import decode_part
from .decoded_thread import DecodedThread, EventRecord, Gap
from .expand import BlockExpander
from .images import process_image
from .parallel import PIECE_MIN_BYTES, decode_pieces


def decode_thread_trace(trace, cpu, image, expander, workers=1, title="Decoding a trace"):
    """A DecodedThread of ``trace``: in pieces on ``workers`` processes when it is large enough to pay.

    The decode is a progress task named ``title``; an interrupt raises WorkInterruptedError, keeping nothing.
    """
    started = time.perf_counter()
    with progress.task(title, len(trace)) as task:
        if workers > 1 and len(trace) >= PIECE_MIN_BYTES:
            parts = decode_pieces(trace, cpu, image, expander, workers, task)
        else:
            parts = [decode_part(trace, cpu, image, expander, task=task)]
    return DecodedThread(parts, time.perf_counter() - started)


__all__ = [
    "BlockExpander",
    "CodeMemory",
    "DecodedThread",
    "EventRecord",
    "Gap",
    "decode_thread_trace",
    "process_image",
]
