"""The ``--instructions`` and ``--only-events`` views: which items (or events) a dump shows, looked up once.

The window is COUNT items (or events) from a start: OFFSET back from the newest (from
the oldest going forwards), OFFSET on from --id, or where the previous dump
stopped.  The instructions are one walk of the trace object's cursor; the
events are numbered in trace order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING

from ..decode.cursor import TraceCursor
from ..x86.control_flow_kind import ControlFlowKinds
from .options import DumpOptions
from .shown import ShownEvent, ShownInstruction, shown_time

if TYPE_CHECKING:
    from ..decode.decoded_thread import DecodedThread
    from ..traced_thread import TracedThread


def instruction_window(
    thread: TracedThread, options: DumpOptions, start: int | None = None
) -> tuple[list[ShownInstruction], int | None]:
    """``(ShownInstruction list in display order, the index to continue from or None)``.

    ``start`` (a continuation) overrides the window's start from --offset and --id.  A window at the
    end of a large trace decodes only that end (TracedThread.end_of); while the trace before it is not
    decoded, its items are numbered from the end (-1: the last), and so is the index to continue from.
    """
    decoded, base, start = _window_start(thread, options, start)
    if not 0 <= start < decoded.item_count:  # (the cursor would read a negative start from the end)
        return [], None
    cursor = TraceCursor(decoded, thread.expander, options.forwards, None if options.raw else thread.symbolizer)
    cursor.seek(start)
    conversion = thread.tsc_conversion
    kinds = ControlFlowKinds(thread.module_bytes.read) if options.kind else None
    shown = [
        ShownInstruction(
            replace(item, index=item.index + base) if base else item,
            shown_time(item.tsc, conversion),
            None if item.gap is not None or options.raw else item.location,
            kinds[item.address] if kinds is not None and item.gap is None else None,
        )
        for item in cursor.items(limit=options.count)
    ]
    return shown, cursor.index + base if cursor.has_value else None


def _window_start(thread: TracedThread, options: DumpOptions, start: int | None) -> tuple[DecodedThread, int, int]:
    """``(DecodedThread, what its indexes add up to when shown, the index the window starts at)``."""
    count = options.count
    if options.forwards or options.id is not None or count is None or (start is not None and start >= 0):
        decoded = thread.decoded_or_error()
        if start is None:
            base = options.id if options.id is not None else (0 if options.forwards else decoded.item_count - 1)
            start = base + options.offset if options.forwards else base - options.offset
        return decoded, 0, start
    back = options.offset + 1 if start is None else -start  # the first item shown, counted from the end
    end = thread.end_of(back + count)
    assert end is not None, "a dump of a thread without a trace is empty (dump_thread)"
    decoded = end.decoded
    return decoded, -decoded.item_count if end.from_end else 0, decoded.item_count - back


def event_window(
    thread: TracedThread, options: DumpOptions, start: int | None = None
) -> tuple[list[ShownEvent], int | None]:
    """``(ShownEvent list in display order, the event number to continue from or None)``.

    Events are numbered in trace order.  --id starts at the events of that item;
    --offset skips that many events; ``start`` (a continuation) overrides both.
    """
    decoded = thread.decoded_or_error()
    events = decoded.events
    if start is None:
        items = [event.index for event in events]
        if options.forwards:
            first = 0 if options.id is None else bisect_left(items, options.id)
            start = first + options.offset
        else:
            last = len(events) - 1 if options.id is None else bisect_right(items, options.id) - 1
            start = last - options.offset
    if not 0 <= start < len(events):
        return [], None
    step = 1 if options.forwards else -1
    stop = len(events) if options.forwards else -1
    if options.count is not None:
        stop = min(stop, start + options.count) if options.forwards else max(stop, start - options.count)
    conversion = thread.tsc_conversion
    timed = options.time and decoded.has_timestamps
    shown = [
        ShownEvent(events[k], shown_time(decoded.timestamp(events[k].index), conversion) if timed else None)
        for k in range(start, stop, step)
    ]
    return shown, stop if 0 <= stop < len(events) else None
