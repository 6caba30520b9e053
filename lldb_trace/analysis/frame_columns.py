"""The calls of a stretch of one thread's history as columns, clipped to the stretch.

A frame's inclusive instructions are those between its first and last item
(its callees' included, gaps not); its exclusive instructions are those
executed in the frame itself.  Summed over every frame of the stretch, the
exclusive counts give the stretch's instruction count, since every
instruction runs in exactly one innermost frame.  Times are the estimated
time at a frame's first item and at the item after its last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .item_range import ItemRange, parse_range
from .times import ThreadTimes

if TYPE_CHECKING:
    from ..decode.call_forest import CallForest
    from ..traced_thread import TracedThread


@dataclass
class Frames:
    """Columns, one row per call overlapping ``range``, in execution order (callers before callees).

    ``row`` is the call's row in the thread's CallForest, ``parent`` the index
    of the caller in these columns (-1 for the outermost frames of the range).
    """

    range: ItemRange
    row: np.ndarray
    first: np.ndarray  # clipped to the range
    last: np.ndarray
    depth: np.ndarray
    entry: np.ndarray  # the entry address of the function that ran (0: unknown)
    parent: np.ndarray
    inclusive: np.ndarray  # instructions
    exclusive: np.ndarray
    starts_inside: np.ndarray  # bool: the call began inside the range (calls are counted where they begin)
    gap_items: np.ndarray  # the gaps of the range, by item index
    times: ThreadTimes
    instruction_count: int

    def __len__(self) -> int:
        return len(self.row)

    @property
    def timed(self) -> bool:
        return self.times.known

    def start_time(self) -> np.ndarray:
        return self.times.at(self.first)

    def end_time(self) -> np.ndarray:
        return self.times.at(self.last + 1)

    def inclusive_time(self) -> np.ndarray:
        """Time from a frame's first item to the item after its last (int64, the times' unit)."""
        return self.end_time() - self.start_time()

    def exclusive_time(self) -> np.ndarray:
        """Inclusive time less the callees' inclusive time."""
        inclusive = self.inclusive_time()
        return inclusive - _children_sum(self.parent, inclusive)


def frames_of(thread: TracedThread, item_range: ItemRange | str | None = None) -> Frames:
    """The Frames of ``thread`` over ``item_range`` (an ItemRange, a ``FROM:TO`` text, or None: all)."""
    forest = thread.call_forest()  # raises for a thread without a trace
    decoded = thread.decoded_or_error()
    if item_range is None or isinstance(item_range, str):
        item_range = parse_range(item_range, decoded.item_count)
    times = ThreadTimes.of(thread)
    gaps = np.array(sorted(gap.index for gap in decoded.gaps), dtype=np.int64)
    gaps = gaps[(gaps >= item_range.first) & (gaps <= item_range.last)]
    return build_frames(forest, item_range, times, gaps)


def build_frames(forest: CallForest, item_range: ItemRange, times: ThreadTimes, gap_items: np.ndarray) -> Frames:
    """Frames from a CallForest's columns (see frames_of)."""
    low, high = item_range.first, item_range.last
    candidates = np.arange(int(np.searchsorted(forest.first, high, side="right")))
    rows = candidates[forest.last[candidates] >= low]
    first_unclipped = forest.first[rows].astype(np.int64)
    first = np.maximum(first_unclipped, low)
    last = np.minimum(forest.last[rows].astype(np.int64), high)
    parent_rows = forest.parent[rows].astype(np.int64)
    parent = np.searchsorted(rows, parent_rows)
    parent = np.where((parent_rows >= 0) & (parent < len(rows)), parent, -1)
    parent = np.where(rows[np.minimum(np.maximum(parent, 0), max(len(rows) - 1, 0))] == parent_rows, parent, -1)
    gaps_within = np.searchsorted(gap_items, last, side="right") - np.searchsorted(gap_items, first, side="left")
    inclusive = last - first + 1 - gaps_within
    exclusive = inclusive - _children_sum(parent, inclusive)
    return Frames(
        range=item_range,
        row=rows,
        first=first,
        last=last,
        depth=forest.depth[rows].astype(np.int64),
        entry=forest.entry[rows],
        parent=parent,
        inclusive=inclusive,
        exclusive=exclusive,
        starts_inside=first_unclipped >= low,
        gap_items=gap_items,
        times=times,
        instruction_count=item_range.count - len(gap_items),
    )


def _children_sum(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per frame, the sum of ``values`` over its direct callees."""
    sums = np.zeros(len(values), dtype=values.dtype)
    has_parent = parent >= 0
    np.add.at(sums, parent[has_parent], values[has_parent])
    return sums
