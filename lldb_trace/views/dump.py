"""A thread dump, as LLDB's TraceDumper makes one: a walk that produces entries, then a writer.

``dump_thread`` walks one thread's trace (its cursor, its events or its call
forest) for the window the options ask for and returns a ThreadDump;
``render`` hands the dumps to the text or the JSON writer.  The debugger's
business (which threads, where Enter continues) stays with the caller: it
passes a Continuation and keeps the ThreadDump's ``next_start``.
"""

import json
from dataclasses import dataclass

from ..errors import LldbTraceError
from .calls import call_window
from .entries import ThreadDump
from .info import info_text
from .instructions import event_window, instruction_window
from .json_writer import JsonWriter
from .options import CALLS, EVENTS
from .text_writer import TextWriter


class ItemOutOfRangeError(LldbTraceError):
    """--id names an item past the end of the thread's trace."""


@dataclass(frozen=True)
class Continuation:
    """Where the previous dump of the same thread and kind stopped (``start`` None: it reached the end)."""

    start: int | None


def dump_thread(process_trace, tid, options, symbolizer, continuation=None):
    """The ThreadDump of ``tid`` for ``options`` (a windowed mode), continuing ``continuation`` when given."""
    has_trace = process_trace.has_trace(tid)
    if options.id is not None and has_trace:
        decoded = process_trace.decoded(tid)
        if options.id >= decoded.item_count:
            items = f"its items are 0 to {decoded.item_count - 1}"
            raise ItemOutOfRangeError(f"--id {options.id} is past the end of thread {tid}'s trace: {items}")
    if not has_trace or (continuation is not None and continuation.start is None):
        entries, next_start = [], None
    else:
        start = continuation.start if continuation is not None else None
        if options.mode == EVENTS:
            entries, next_start = event_window(process_trace, tid, options, start)
        elif options.mode == CALLS:
            entries, next_start = call_window(process_trace, tid, options, symbolizer, start)
        else:
            entries, next_start = instruction_window(process_trace, tid, options, symbolizer, start)
    wall_clock = process_trace.bundle.tsc_conversion is not None
    return ThreadDump(process_trace.pid, tid, has_trace, wall_clock, entries, next_start)


def render(dumps, options):
    """The dumps of every thread as one text or JSON document."""
    writer = JsonWriter(options) if options.json else TextWriter(options)
    return writer.document([writer.thread(dump) for dump in dumps])


def render_info(info, options):
    """The session info (``info.session_info``) as text or JSON."""
    return json.dumps(info, indent=2) if options.json else info_text(info)
