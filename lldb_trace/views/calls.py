"""The ``--function-calls`` view: which calls of the call forest a dump shows, in execution order.

Calls are filtered by --module and --function globs (on the module's file
name of the function that ran; --function keeps the calls of the functions a
name leads to, as ``pt find`` does: see history/named_calls.py).  Each call is
shown at the item of its function's first instruction (after the PLT stub it
went through).  The window is COUNT calls: by default the last ones, OFFSET back
from the end; ``forwards`` counts from the first call instead; an anchor
(--id) puts the window's newest (or, forwards, oldest) call at the call
that holds an item.  The window is shown oldest first unless
``newest_first``; Enter continues towards older calls, or newer ones going
forwards.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import numpy as np

from ..decode.call_forest import Call, CallForest, list_index
from ..history import named_calls
from .options import DumpOptions
from .shown import ShownCall, shown_time

if TYPE_CHECKING:
    from ..bundle.model import TscConversion
    from ..decode.decoded_thread import DecodedThread
    from ..symbolize import Location, Symbolizer
    from ..traced_thread import TracedThread


def call_window(
    thread: TracedThread, options: DumpOptions, start: int | None = None
) -> tuple[list[ShownCall], int | None]:
    """``(ShownCall list in display order, where Enter continues or None)``; ``start``: a continuation's."""
    symbolizer = thread.symbolizer
    listed = listed_calls(thread.call_forest(), options, symbolizer)
    if start is None and options.id is not None:
        at = anchor(listed, options.id)
        start = at + options.offset if options.forwards else at - options.offset
    calls, next_start = _window(listed, options, start)
    decoded = thread.decoded_or_error()
    conversion = thread.tsc_conversion

    def locate(address: int | None) -> Location | None:
        return symbolizer.locate(address) if address is not None else None

    entries = [call.address if call.address is not None else _pending_entry(thread, call) for call in calls]
    shown = [
        ShownCall(
            call,
            locate(entry),
            locate(call.stub),
            timing(decoded, call, conversion) if decoded.has_timestamps else None,
            entry,
        )
        for call, entry in zip(calls, entries, strict=True)
    ]
    return shown[::-1] if options.newest_first else shown, next_start


def _pending_entry(thread: TracedThread, call: Call) -> int | None:
    """Where the thread stands, for a call made by the trace's last instruction (no instruction of the function ran
    yet: a breakpoint at its entry); None for any other call without instructions (a gap came next)."""
    decoded = thread.decoded_or_error()
    if call.first < decoded.item_count or not decoded.item_count:
        return None
    pc = thread.stop_pc
    return pc if pc is not None and pc != thread.cursor().item().address else None


def listed_calls(forest: CallForest, options: DumpOptions, symbolizer: Symbolizer) -> Sequence[Call]:
    """The calls the filters let through, in execution order."""
    if options.module is None and options.function is None:
        return forest.calls()
    if options.function is None:
        entries = np.unique(forest.entry).tolist()
    else:
        entries = named_calls.targets(forest, symbolizer, options.function)
    if options.module is not None:
        entries = [entry for entry in entries if fnmatchcase(symbolizer.locate(entry).module or "", options.module)]
    wanted = np.array(sorted(entry for entry in entries if entry), dtype=np.uint64)  # 0: no instruction of it
    return [forest.call(row) for row in np.flatnonzero(np.isin(forest.entry, wanted)).tolist()]


def anchor(calls: Sequence[Call], item: int) -> int:
    """Where item ``item`` is in ``calls``: the innermost listed call holding it, else the last one before it (-1)."""
    k = bisect_right(calls, item, key=lambda call: call.first) - 1
    if k < 0:
        return -1
    node = calls[k]
    while node is not None and node.last < item:
        node = node.parent
    while node is not None:
        k = list_index(calls, node)
        if k >= 0:
            return k
        node = node.parent
    return k


def _window(calls: Sequence[Call], options: DumpOptions, start: int | None = None) -> tuple[list[Call], int | None]:
    """``(calls to show in execution order, where Enter continues or None)``.

    ``start`` is where the window's newest call is in ``calls`` (its oldest going
    forwards): a continuation's or an anchor's; by default OFFSET from the end
    (from the beginning going forwards).
    """
    total = len(calls)
    if start is None:
        start = options.offset if options.forwards else total - 1 - options.offset
    if options.forwards:
        start = max(start, 0)
        stop = total if options.count is None else min(total, start + options.count)
        return list(calls[start:stop]), (stop if stop < total else None)
    if start < 0 or start >= total:
        return [], None
    low = 0 if options.count is None else max(0, start + 1 - options.count)
    return list(calls[low : start + 1]), (low - 1 if low > 0 else None)


def _duration(decoded: DecodedThread, call: Call, conversion: TscConversion | None) -> int | None:
    """From the call's first item to the item after its last: None when the time did not change in between."""
    first = decoded.timestamp(call.first)
    last = decoded.timestamp(min(call.last + 1, decoded.item_count))
    if first is None or last is None or first == last:
        return None
    return shown_time(last, conversion) - shown_time(first, conversion)


def timing(decoded: DecodedThread, call: Call, conversion: TscConversion | None) -> tuple[int, int] | tuple[()]:
    """``(inclusive, exclusive)`` in ns (TSC ticks without a conversion); () when the trace's timing is too
    coarse to tell (no time update inside the call: "0 ticks" would be wrong), None without timestamps."""
    inclusive = _duration(decoded, call, conversion)
    if inclusive is None:
        return ()
    children = sum(_duration(decoded, child, conversion) or 0 for child in call.children)
    return inclusive, max(0, inclusive - children)
