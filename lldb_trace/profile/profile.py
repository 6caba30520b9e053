"""A thread's profile over a range: one row per function, source line or module, from its call forest.

- calls: the calls made in the range (its first item and its call instruction
  both in it; see keys.counted_calls).  By line, the calls made from the
  line; by module, the calls of the module's functions.
- exclusive: by function, the instructions run in the function's own frames
  (a PLT stub's in the frame of the function it reached); by line or module,
  the instructions at the line's or module's addresses.  Each instruction is
  in exactly one row, so the column adds up to the range's instruction count.
- inclusive: the instructions run while the row is on the stack, each once
  (recursion counted once): a function's outermost frames; a line's own
  instructions and everything the calls made from it ran; a module's own
  instructions and everything its functions' frames ran (a callback into
  another module included).
- times (when the trace has timing): an instruction lasts until the next
  item's time; exclusive and inclusive time sum those durations as the counts
  sum instructions.  Without timing the time fields are None, not zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import ItemRange, frames_of, parse_range
from ..errors import LldbTraceError
from .by_address import count_by_address, sums
from .keys import FUNCTION, LINE, MODULE, KeyTable, call_items, counted_calls, frame_entry_keys
from .outermost_frames import Intervals, outermost
from .timeline import Timeline

if TYPE_CHECKING:
    from ..traced_thread import TracedThread

GROUPINGS = {  # what a row is, with what it means (pt profile's help)
    FUNCTION: "one row per function (the default)",
    LINE: "one row per source line (per function where there is no line information)",
    MODULE: "one row per module",
}
SORTS = ("exclusive", "inclusive", "calls", "name", "time", "inclusive-time")


class ProfileError(LldbTraceError):
    """A profile that cannot be made: no trace, an unknown grouping or sort."""


@dataclass
class ProfileRow:
    name: str
    calls: int
    exclusive: int
    inclusive: int
    exclusive_time: int | None
    inclusive_time: int | None
    fields: dict  # what the row is: module and function, file, line and function, or module
    order: tuple  # what --sort name orders by


@dataclass
class Profile:
    tid: int
    by: str
    range: ItemRange
    instructions: int
    time_unit: str | None  # "ns", "ticks", or None: the trace has no timing
    rows: list[ProfileRow]  # every row, most exclusive instructions first

    @property
    def calls(self) -> int:
        return sum(row.calls for row in self.rows)

    @property
    def time(self) -> int | None:
        return sum(row.exclusive_time or 0 for row in self.rows) if self.time_unit else None

    def share(self, count: int) -> float:
        return count / self.instructions if self.instructions else 0.0

    def sorted_rows(self, sort: str = "exclusive") -> list[ProfileRow]:
        """The rows by ``sort`` (one of SORTS): largest first, names in order."""
        if sort not in SORTS:
            raise ProfileError(f"unknown sort '{sort}': choose {', '.join(SORTS[:-1])} or {SORTS[-1]}")
        if sort in ("time", "inclusive-time") and not self.time_unit:
            raise ProfileError(f"cannot sort by {sort}: the trace of thread {self.tid} has no timing")
        if sort == "name":
            return sorted(self.rows, key=lambda row: row.order)
        field = {"time": "exclusive_time", "inclusive-time": "inclusive_time"}.get(sort, sort)
        return sorted(self.rows, key=lambda row: (-getattr(row, field), row.order))


def profile(thread: TracedThread, by: str = FUNCTION, item_range: ItemRange | str | None = None) -> Profile:
    """The Profile of ``thread`` by ``by`` over ``item_range`` (an ItemRange, ``FROM:TO`` text, or None: all)."""
    if by not in GROUPINGS:
        *others, last = GROUPINGS
        raise ProfileError(f"unknown grouping '{by}': choose {', '.join(others)} or {last}")
    decoded = thread.decoded
    if decoded is None:
        raise ProfileError(f"thread {thread.tid} has no trace to profile")
    if not isinstance(item_range, ItemRange):
        item_range = parse_range(item_range, decoded.item_count)
    frames = frames_of(thread, item_range)
    forest = thread.call_forest()
    symbolizer = thread.symbolizer
    span = decoded.item_count + 1
    keys = KeyTable()
    items = call_items(forest, frames)
    counted = counted_calls(forest, frames, items, by)
    if by == FUNCTION:
        stack_keys = frame_entry_keys(keys, frames, symbolizer, FUNCTION)
    else:
        timeline = Timeline(decoded, thread.expander)
        own = keys.of_addresses(timeline.addresses, symbolizer, by)
        stack_keys = _call_lines(timeline, own, items) if by == LINE else frame_entry_keys(keys, frames, symbolizer, by)
    outer = outermost(stack_keys, frames.first, frames.last, span)
    count = len(keys)
    calls = np.bincount(stack_keys[counted & (stack_keys >= 0)], minlength=count)
    inclusive = sums(stack_keys[outer], frames.inclusive[outer], count)
    timed = frames.timed
    inclusive_time = sums(stack_keys[outer], frames.inclusive_time()[outer], count) if timed else None
    exclusive_time: np.ndarray | None = None
    if by == FUNCTION:
        exclusive = sums(stack_keys, frames.exclusive, count)
        if timed:
            exclusive_time = sums(stack_keys, frames.exclusive_time(), count)
    else:
        stretches = Intervals(stack_keys[outer], frames.first[outer], frames.last[outer], span)
        counts = count_by_address(timeline, item_range, own, stretches, frames.times, count)
        exclusive, inclusive = counts.exclusive, inclusive + counts.outside
        if timed:
            exclusive_time, inclusive_time = counts.exclusive_time, inclusive_time + counts.outside_time
    rows = [
        ProfileRow(
            keys.names[k],
            int(calls[k]),
            int(exclusive[k]),
            int(inclusive[k]),
            None if exclusive_time is None else int(exclusive_time[k]),
            None if inclusive_time is None else int(inclusive_time[k]),
            keys.fields[k],
            keys.orders[k],
        )
        for k in range(count)
        if calls[k] or exclusive[k] or inclusive[k]
    ]
    made = Profile(thread.tid, by, item_range, frames.instruction_count, frames.times.unit if timed else None, rows)
    made.rows = made.sorted_rows()
    return made


def _call_lines(timeline: Timeline, own: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The line (its row) of each frame's call instruction; -1 where the call was not traced."""
    lines = np.full(len(items), -1, dtype=np.int64)
    traced = items >= 0
    lines[traced] = own[timeline.flat_index(items[traced])]
    return lines
