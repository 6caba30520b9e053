"""Estimated time of any item of a thread, many at once: the timestamp table as two numpy columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..bundle.model import TscConversion
    from ..decode.decoded_thread import DecodedThread
    from ..traced_thread import TracedThread


class ThreadTimes:
    """The time in effect at each item: ns when the bundle converts TSC to wall-clock time, else TSC ticks.

    Times are int64 (wall-clock ns need 61 bits; float64 would round them to
    hundreds of ns).  Items before the first timing packet take its time.  A
    thread without timing packets has ``known`` False; callers then leave their
    time columns out rather than show zeros.
    """

    def __init__(self, decoded: DecodedThread, conversion: TscConversion | None = None) -> None:
        items, values = [], []
        for part, start in zip(decoded.parts, decoded.part_starts, strict=False):
            items.append(np.frombuffer(part.tsc_items, dtype=np.uint64).astype(np.int64) + int(start))
            values.append(np.frombuffer(part.tsc_values, dtype=np.uint64))
        self._items = np.concatenate(items) if items else np.zeros(0, np.int64)
        tsc = np.concatenate(values) if values else np.zeros(0, np.uint64)
        self.unit = "ns" if conversion is not None else "ticks"
        self._values = _to_ns(tsc, conversion) if conversion is not None else tsc.astype(np.int64)
        self.known = len(self._values) > 0
        self.updates = len(self._values)  # how many times the time changed: a measure of how fine it is

    @classmethod
    def of(cls, thread: TracedThread) -> ThreadTimes:
        """The times of a traced thread's items, in ns where its bundle converts TSC (decodes the thread)."""
        return cls(thread.decoded_or_error(), thread.tsc_conversion)

    def at(self, indices: np.ndarray | list[int]) -> np.ndarray:
        """Times of items ``indices`` (an int array) as int64; zeros when the thread has no timing."""
        indices = np.asarray(indices, dtype=np.int64)
        if not self.known:
            return np.zeros(indices.shape, np.int64)
        k = np.searchsorted(self._items, indices, side="right") - 1
        return self._values[np.maximum(k, 0)]

    def origin(self) -> int:
        """The first known time (exports start their axis there); 0 without timing."""
        return int(self._values[0]) if self.known else 0


def _to_ns(tsc: np.ndarray, conversion: TscConversion) -> np.ndarray:
    """perf's conversion, split as perf splits it so that 64-bit products do not overflow, in perf's unsigned
    64-bit arithmetic (a time_zero past 2**63 wraps as it does there).  The loaders keep ``time_shift`` in
    0..63 and ``time_mult`` in a u32 (schemas/intel-pt.json, perf_data/clocks.py)."""
    shift, mult = np.uint64(conversion.time_shift), np.uint64(conversion.time_mult)
    quotient, remainder = tsc >> shift, tsc & np.uint64((1 << conversion.time_shift) - 1)
    with np.errstate(over="ignore"):
        ns = quotient * mult + ((remainder * mult) >> shift) + np.uint64(conversion.time_zero % (1 << 64))
    return ns.view(np.int64)
