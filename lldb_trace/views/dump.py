"""A thread dump, as LLDB's TraceDumper makes one: a walk that produces what it shows, then a writer.

``dump_thread`` walks one thread's trace (its cursor, its events or its call
forest) for the window the options ask for and returns a ThreadDump;
``render`` hands the dumps to the text or the JSON writer.  The debugger's
business (which threads, where Enter continues) stays with the caller: it
passes a Continuation and keeps the ThreadDump's ``next_start``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LldbTraceError
from .calls import call_window
from .info import info_text
from .instructions import event_window, instruction_window
from .json_writer import JsonWriter
from .options import CALLS, EVENTS, DumpOptions
from .shown import ThreadDump
from .text_writer import TextWriter

if TYPE_CHECKING:
    from ..traced_thread import TracedThread


class ItemOutOfRangeError(LldbTraceError):
    """--id names an item past the end of the thread's trace."""


@dataclass(frozen=True)
class Continuation:
    """Where the previous dump of the same thread and kind stopped (``start`` None: it reached the end)."""

    start: int | None


def dump_thread(thread: TracedThread, options: DumpOptions, continuation: Continuation | None = None) -> ThreadDump:
    """The ThreadDump of ``thread`` for ``options`` (a windowed mode), continuing ``continuation`` when given."""
    has_trace = thread.has_trace
    if options.id is not None and has_trace:
        item_count = thread.item_count
        if options.id >= item_count:
            items = f"its items are 0 to {item_count - 1}"
            raise ItemOutOfRangeError(f"--id {options.id} is past the end of thread {thread.tid}'s trace: {items}")
    if not has_trace or (continuation is not None and continuation.start is None):
        shown: list = []
        next_start: int | None = None
    else:
        start = continuation.start if continuation is not None else None
        if options.mode == EVENTS:
            shown, next_start = event_window(thread, options, start)
        elif options.mode == CALLS:
            shown, next_start = call_window(thread, options, start)
        else:
            shown, next_start = instruction_window(thread, options, start)
    wall_clock = thread.tsc_conversion is not None
    return ThreadDump(thread.pid, thread.tid, has_trace, wall_clock, shown, next_start)


def render(dumps: Sequence[ThreadDump], options: DumpOptions) -> str:
    """The dumps of every thread as one text or JSON document."""
    if options.json:
        objects = JsonWriter(options)
        return objects.document([objects.thread(dump) for dump in dumps])
    text = TextWriter(options)
    return text.document([text.thread(dump) for dump in dumps])


def render_info(info: dict, options: DumpOptions) -> str:
    """The session info (``info.session_info``) as text or JSON."""
    return json.dumps(info, indent=2) if options.json else info_text(info)
