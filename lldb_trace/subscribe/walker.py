"""A thread's history delivered to Python callbacks, in trace order, a stretch of items at a time.

The calls, returns and gaps of the range are numpy columns from the start
(analysis.frames_of), the filters are applied to them there, and the
instructions are expanded a chunk of items at a time (instructions.py):
what a filter leaves out, and the kinds nobody subscribed to, never reach
Python.  In each chunk the kinds are merged by (item, rank) with one lexsort,
so a call comes before its first instruction and a return after its last,
and the events are made as they are delivered.  Memory stays bounded by the
chunk, whatever the trace's length.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import progress
from ..analysis import frames_of
from ..decode.forest_builder import UNTRACED_START
from ..errors import LldbTraceError
from .events import KINDS, Event, StopWalk, WalkSummary
from .filters import Filter
from .instructions import Innermost, Instructions

if TYPE_CHECKING:
    from ..analysis import ItemRange
    from ..traced_thread import TracedThread

CALL, RETURN, GAP, INSTRUCTION = range(4)
_RANK = np.array([1, 3, 1, 2])  # by kind; at one item: calls and gaps, then the instruction, then returns
SHORT_RUNS = 4  # events per run of one kind below which _deliver picks each event's stream
CHUNK = 1 << 14  # items per chunk: a chunk's columns stay near 1 MB, its Python values near 2 MB


class WalkError(LldbTraceError):
    """A walk asked for something it cannot do (a callback that is not callable...)."""


class Walk:
    """What the events of one walk share: the forest (for ``event.call``) and the labels resolved so far."""

    def __init__(self, forest, symbolizer):
        self.forest, self.symbolizer = forest, symbolizer
        self._labels = {}

    @cached_property
    def innermost(self):
        """The innermost call at any item (instructions.Innermost), made when instructions first need it."""
        return Innermost(self.forest)

    def label(self, address):
        found = self._labels.get(address)
        if found is None:
            found = self._labels[address] = self.symbolizer.locate(address).function_label
        return found


def walk(
    thread: TracedThread,
    callbacks: dict[str, Callable[[Event], Any] | None],
    functions: str | Iterable[str] | None = None,
    modules: str | Iterable[str] | None = None,
    item_range: ItemRange | str | tuple[int, int] | None = None,
    chunk: int = CHUNK,
) -> WalkSummary:
    """Deliver the events of ``thread`` to ``callbacks`` (kind -> callable or None); a WalkSummary.

    ``item_range``: an analysis.ItemRange, a ``FROM:TO`` text, a ``(first, last)`` pair or None (all).
    """
    for kind, callback in callbacks.items():
        if callback is not None and not callable(callback):
            raise WalkError(f"on_{kind} must be callable, not {type(callback).__name__}")
    if isinstance(item_range, tuple):
        item_range = f"{item_range[0]}:{item_range[1]}"
    frames = frames_of(thread, item_range)
    summary = WalkSummary(frames.range)
    handlers = tuple(callbacks.get(kind) for kind in KINDS)
    if not any(handlers):
        return summary
    state = Walk(thread.call_forest(), thread.symbolizer)
    chooser = Filter(thread, functions, modules)
    times = frames.times.at if frames.times.known else lambda _indices: None
    sparse = _sparse_columns(frames, state.forest, chooser, handlers, times)
    instructions = None
    if handlers[INSTRUCTION]:
        wanted = chooser.wanted if chooser.active else None
        instructions = Instructions(thread.decoded_or_error(), thread.expander, wanted)
    first, last = frames.range.first, frames.range.last
    with progress.task(f"Walking the history of thread {thread.tid}", frames.range.count) as task:
        low = first
        while low <= last:
            high = _chunk_end(low, last, chunk, sparse, instructions is not None)
            columns = [_slice(column, low, high) for column in sparse]
            if instructions is not None:
                indices, addresses = instructions.between(low, high)
                depths = state.innermost.depth(indices) if len(indices) else indices
                columns[INSTRUCTION] = (indices, times(indices), depths, addresses, None)
            if _deliver(columns, handlers, state, summary):
                break
            task.at(high - first + 1)
            low = high + 1
    return summary


def _chunk_end(low, last, chunk, sparse, with_instructions):
    """The last item of the chunk from item ``low``: ``chunk`` items when instructions are walked, else as
    many as hold about ``chunk`` events (calls, returns and gaps are sparse: a chunk of items may hold none)."""
    if with_instructions:
        return min(low + chunk - 1, last)
    end = last
    for column in sparse:
        if column is not None:
            k = int(np.searchsorted(column[0], low)) + chunk
            end = min(end, max(int(column[0][k]) - 1, low)) if k < len(column[0]) else end
    return end


def _sparse_columns(frames, forest, chooser, handlers, times):
    """Per kind, ``(items, times, depths, addresses, rows)`` over the whole range (None: not subscribed;
    a kind's column it does not have, or times without timing: None)."""
    columns: list[tuple | None] = [None] * len(KINDS)
    wanted = chooser.wanted(frames.entry) if chooser.active and (handlers[CALL] or handlers[RETURN]) else True
    if handlers[CALL]:
        parent = forest.parent[frames.row].astype(np.int64)
        above = np.maximum(parent, 0)
        untraced_caller = (forest.flags[above] & UNTRACED_START).astype(bool) & (
            forest.first[above] == forest.first[frames.row]
        )
        seen_begin = frames.starts_inside & (parent >= 0) & ~untraced_caller  # tree roots were running already
        k = np.flatnonzero(seen_begin & wanted)
        first = frames.first[k]
        columns[CALL] = (first, times(first), frames.depth[k], frames.entry[k], frames.row[k])
    if handlers[RETURN]:
        last = forest.last[frames.row].astype(np.int64)
        ended = (last < frames.range.last) & ~np.isin(last + 1, frames.gap_items)  # execution went on after it
        k = np.flatnonzero(ended & wanted)
        k = k[np.lexsort((-frames.depth[k], last[k]))]  # inner calls return first
        columns[RETURN] = (last[k], times(last[k] + 1), frames.depth[k], frames.entry[k], frames.row[k])
    if handlers[GAP]:
        gaps = frames.gap_items
        columns[GAP] = (gaps, times(gaps), None, None, None)
    return columns


def _slice(column, low, high):
    if column is None:
        return None
    items = column[0]
    start, stop = np.searchsorted(items, low), np.searchsorted(items, high, side="right")
    return tuple(None if values is None else values[start:stop] for values in column)


def _deliver(columns, handlers, state, summary):
    """Call the handlers on one chunk's events in trace order; True when a callback stopped the walk.

    Events of one kind in a row are delivered by one loop over that kind's stream; where kinds alternate
    every event or two (calls and returns of small functions), starting a loop per run costs more than
    picking each event's stream.
    """
    present = [kind for kind, column in enumerate(columns) if column is not None and len(column[0])]
    streams = {kind: _events(*columns[kind]) for kind in present}
    order = _order(columns, present)
    if order is not None:
        starts = np.concatenate(([0], np.flatnonzero(order[1:] != order[:-1]) + 1))
        if len(order) < SHORT_RUNS * len(starts):
            return _deliver_each(order, streams, handlers, state, summary)
        runs: Iterable[tuple[int, int]] = zip(
            order[starts].tolist(), np.diff(np.append(starts, len(order))).tolist(), strict=True
        )
    else:
        runs = [(kind, len(columns[kind][0])) for kind in present]
    for kind, count in runs:
        handler, name, events = handlers[kind], KINDS[kind], itertools.islice(streams[kind], count)
        try:
            for index, time, depth, address, row in events:
                if handler(Event(name, index, time, depth, address, row, state)) is False:
                    break
            else:
                summary.delivered[name] += count
                continue
        except StopWalk:
            pass
        summary.delivered[name] += count - sum(1 for _ in events)  # those after the stopping one were not
        summary.stopped_at = index
        return True
    return False


def _deliver_each(order, streams, handlers, state, summary):
    """``_deliver`` one event at a time, each from the stream of its kind (``order``: their kinds)."""
    next_of = {kind: stream.__next__ for kind, stream in streams.items()}
    stopped, last = False, -1
    try:
        for last, kind in enumerate(order.tolist()):  # noqa: B007 (how far it got counts)
            index, time, depth, address, row = next_of[kind]()
            if handlers[kind](Event(KINDS[kind], index, time, depth, address, row, state)) is False:
                stopped = True
                break
    except StopWalk:
        stopped = True
    for kind, count in enumerate(np.bincount(order[: last + 1], minlength=len(KINDS)).tolist()):
        summary.delivered[KINDS[kind]] += count
    if stopped:
        summary.stopped_at = index
    return stopped


def _order(columns, present):
    """The kinds of the chunk's events in trace order (an array), or None when there is only one kind."""
    if len(present) <= 1:
        return None
    items = np.concatenate([columns[kind][0] for kind in present])
    kinds = np.concatenate([np.full(len(columns[kind][0]), kind) for kind in present])
    ties = np.concatenate([_tiebreak(kind, columns[kind]) for kind in present])
    return kinds[np.lexsort((ties, _RANK[kinds], items))]


def _tiebreak(kind, column):
    """Order among events of one kind at one item: outer calls first, inner returns first."""
    if kind == CALL:
        return column[2]
    if kind == RETURN:
        return -column[2]
    return np.zeros(len(column[0]), np.int64)


def _events(items, times, depths, addresses, rows):
    """``(index, time, depth, address, row)`` tuples of one kind's column, as Python values (zip stops
    with ``items``; a column that is None gives endless Nones)."""
    if addresses is not None:
        addresses = addresses.tolist() if addresses.all() else [a or None for a in addresses.tolist()]
    nones = itertools.repeat
    return zip(
        items.tolist(),
        nones(None) if times is None else times.tolist(),
        nones(None) if depths is None else _or_none(depths),
        nones(None) if addresses is None else addresses,
        nones(None) if rows is None else rows.tolist(),
        strict=False,
    )


def _or_none(depths):
    """Depths as Python values, -1 (no call holds the item) as None."""
    values = depths.tolist()
    return [None if v < 0 else v for v in values] if (depths < 0).any() else values
