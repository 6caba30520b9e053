"""One thread's calls made ready for the exporters: names, values on the export's axis, the calls kept.

Every format draws the same calls on the same axis, so they are prepared
here once: ``Axis`` says what the numbers mean (nanoseconds, TSC ticks or
item indices), ``Names`` gives each function one id across threads, and
``ThreadCalls`` holds a thread's calls as numpy columns.  ``walk`` turns them
into open/close events in order without a Python object per call, so a
thread of millions of calls is written with memory bounded by its depth.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import progress
from ..analysis import Frames, ItemRange, frames_of, parse_range

if TYPE_CHECKING:
    from ..bundle.model import Process
    from ..symbolize import Symbolizer
    from ..traced_thread import TracedThread

CHUNK = 8192  # rows converted to Python values at a time (a few hundred KB of ints)
UNKNOWN = "(unknown function)"


@dataclass(frozen=True)
class Axis:
    """What the exported numbers are: ``weight`` "time" (``unit`` "ns" or "ticks") or "instructions" ("items").

    Values are relative to ``origin`` (the earliest time of the exported
    threads); on the "items" axis they are the items' indices themselves, so
    a call's start is the index ``pt goto`` takes.
    """

    weight: str
    unit: str
    origin: int = 0

    @property
    def timed(self) -> bool:
        return self.weight == "time"

    def describe(self, format: str) -> str:
        """The axis in words, for the metadata of a file in ``format``, which decides how a value is shown:
        speedscope has a unit "none" for plain numbers; Chrome JSON and Perfetto only have time."""
        plain = format == "speedscope"
        if self.unit == "ns":
            return f"time axis: nanoseconds since the first timestamp ({self.origin} ns, wall-clock)"
        shown = "shown as plain numbers" if plain else "shown as ns"
        if self.unit == "ticks":
            return f"time axis: TSC ticks since the first timestamp (tick {self.origin}), {shown} (no conversion)"
        shown = "shown as plain numbers, 1 per item" if plain else "shown as 1 µs per item"
        return f"time axis: item indices (no timestamps used), {shown}"

    def describe_weights(self) -> str:
        """What folded stacks' weights are."""
        if self.timed:
            return f"weights: {'nanoseconds' if self.unit == 'ns' else 'TSC ticks'} spent in the leaf function itself"
        return "weights: instructions the leaf function executed itself"


class Names:
    """Function labels (``module`function``) numbered in the order first met, shared by every thread."""

    def __init__(self) -> None:
        self.labels: list[str] = []  # id -> label
        self.places: list[tuple[str | None, int | None]] = []  # id -> (file, line) of the function's entry
        self._ids: dict[str, int] = {}

    def ids(self, symbolizer: Symbolizer, entries: np.ndarray) -> np.ndarray:
        """The name id of each entry address (an array), each distinct address located once."""
        unique, inverse = np.unique(entries, return_inverse=True)
        ids = np.array([self._id_of(symbolizer, int(address)) for address in unique.tolist()], dtype=np.int64)
        return ids[inverse.reshape(-1)]

    def add(self, label: str, place: tuple[str | None, int | None] = (None, None)) -> int:
        """The id of ``label``; ``place`` is kept from its first use."""
        if label not in self._ids:
            self._ids[label] = len(self.labels)
            self.labels.append(label)
            self.places.append(place)
        return self._ids[label]

    def _id_of(self, symbolizer: Symbolizer, address: int) -> int:
        location = symbolizer.locate(address) if address else None
        if location is None or not location.function:
            return self.add(UNKNOWN)
        return self.add(location.function_label, (location.file, location.line))


@dataclass(frozen=True)
class Job:
    """What every writer is told besides the calls: the names, the axis, and words for the file's metadata."""

    names: Names
    axis: Axis
    title: str  # what was exported (the bundle)
    description: str  # one line: the exporter, the range, the axis, what was left out
    several_threads: bool


@dataclass
class ThreadCalls:
    """The kept calls of one thread, in execution order, with their values on the axis (ends excluded)."""

    pid: int
    tid: int
    process_name: str
    item_range: ItemRange
    axis: Axis
    first: np.ndarray  # item indices
    start: np.ndarray  # axis values
    end: np.ndarray
    parent: np.ndarray  # index of the caller in these columns, -1
    depth: np.ndarray
    name: np.ndarray  # Names id
    instructions: np.ndarray  # inclusive instruction counts
    gaps: list[tuple[int, int, str]]  # (item index, axis value, text)
    range_start: int  # the axis values of the range's first item and of the item after its last
    range_end: int
    dropped: int  # calls left out by --min-duration

    def __len__(self) -> int:
        return len(self.first)

    @property
    def thread_name(self) -> str:
        return f"thread {self.tid}"

    def inclusive(self) -> np.ndarray:
        """Each kept call's weight on the axis: its duration, or its instructions."""
        return self.end - self.start if self.axis.timed else self.instructions

    def exclusive(self) -> np.ndarray:
        """Inclusive weight less the kept callees' (so a dropped call counts in its caller)."""
        inclusive = self.inclusive()
        sums = np.zeros(len(inclusive), dtype=inclusive.dtype)
        has_parent = self.parent >= 0
        np.add.at(sums, self.parent[has_parent], inclusive[has_parent])
        return inclusive - sums

    def walk(self, title: str) -> Iterator[tuple[str, int, int, int]]:
        """``("O", call, name, at)``, ``("C", call, name, at)`` and ``("G", gap, -1, at)`` in execution order.

        Times never go backwards (a call opens no earlier than what came before),
        which speedscope requires and nested slices need.
        """
        stack: list[tuple[int, int, int]] = []  # (call, end, name) of the open calls
        gaps = iter(enumerate(self.gaps))
        gap = next(gaps, None)
        at = self.range_start
        with progress.task(title, len(self)) as task:
            for offset in range(0, len(self), CHUNK):
                task.at(offset)
                columns = (self.first, self.start, self.end, self.parent, self.name)
                rows = zip(*(column[offset : offset + CHUNK].tolist() for column in columns), strict=True)
                for call, (first, start, end, parent, name) in enumerate(rows, offset):
                    while stack and stack[-1][0] != parent:
                        closed, closed_end, closed_name = stack.pop()
                        at = max(at, closed_end)
                        yield "C", closed, closed_name, at
                    while gap is not None and gap[1][0] < first:
                        at = max(at, gap[1][1])
                        yield "G", gap[0], -1, at
                        gap = next(gaps, None)
                    at = max(at, start)
                    yield "O", call, name, at
                    stack.append((call, end, name))
        while stack:
            closed, closed_end, closed_name = stack.pop()
            at = max(at, closed_end)
            yield "C", closed, closed_name, at
        while gap is not None:
            yield "G", gap[0], -1, max(at, gap[1][1])
            gap = next(gaps, None)


def thread_calls(
    thread: TracedThread, range_text: str | None, axis: Axis, min_duration: int, names: Names
) -> ThreadCalls:
    """The ThreadCalls of ``thread`` over ``range_text`` (FROM:TO or None)."""
    frames = frames_of(thread, parse_range(range_text, thread.item_count))
    gap_texts = {gap.index: gap.text for gap in thread.decoded_or_error().gaps}
    return from_frames(
        frames, thread.pid, thread.tid, process_name(thread.process_trace.process), axis, min_duration,
        names.ids(thread.symbolizer, frames.entry), gap_texts,
    )  # fmt: skip


def from_frames(
    frames: Frames,
    pid: int,
    tid: int,
    name: str,
    axis: Axis,
    min_duration: int,
    name_ids: np.ndarray,
    gap_texts: dict[int, str],
) -> ThreadCalls:
    """ThreadCalls from an analysis.Frames: values put on ``axis``, calls shorter than ``min_duration`` dropped."""
    item_range = frames.range
    edges: np.ndarray | tuple[int, int]
    if axis.timed:
        start, end = frames.start_time() - axis.origin, frames.end_time() - axis.origin
        edges = frames.times.at(np.array([item_range.first, item_range.last + 1])) - axis.origin
        gap_values = frames.times.at(frames.gap_items) - axis.origin
    else:
        start, end = frames.first.astype(np.int64), frames.last.astype(np.int64) + 1
        edges = (item_range.first, item_range.last + 1)
        gap_values = frames.gap_items
    end = np.maximum(end, start)
    kept = _kept(end - start if axis.timed else frames.inclusive, frames.parent, min_duration)
    kept_index = np.cumsum(kept) - 1
    parent = frames.parent[kept]
    parent = np.where(parent >= 0, kept_index[np.maximum(parent, 0)], -1)
    gaps = [
        (item, value, gap_texts.get(item, "gap"))
        for item, value in zip(frames.gap_items.tolist(), np.asarray(gap_values).tolist(), strict=True)
    ]
    return ThreadCalls(
        pid=pid, tid=tid, process_name=name, item_range=item_range, axis=axis,
        first=frames.first[kept].astype(np.int64), start=start[kept], end=end[kept], parent=parent,
        depth=frames.depth[kept], name=name_ids[kept], instructions=frames.inclusive[kept].astype(np.int64),
        gaps=gaps, range_start=int(edges[0]), range_end=int(edges[1]), dropped=int(len(kept) - kept.sum()),
    )  # fmt: skip


def _kept(durations: np.ndarray, parent: np.ndarray, min_duration: int) -> np.ndarray:
    """Calls at least ``min_duration`` long, and only those whose callers are kept too (so callers stay open)."""
    kept = durations >= (min_duration or 0)
    has_parent = parent >= 0
    while True:
        orphaned = kept & has_parent & ~kept[np.maximum(parent, 0)]
        if not orphaned.any():
            return kept
        kept &= ~orphaned


def process_name(process: Process) -> str:
    """What a process is called: the command perf recorded, else its first module's file name."""
    if process.name:
        return process.name
    return Path(process.modules[0].system_path).name if process.modules else f"process {process.pid}"
