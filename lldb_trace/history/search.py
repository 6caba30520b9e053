"""Finding executions in a whole thread's history without walking it item by item.

An address runs wherever a block that holds it runs.  Each distinct block
(a row of the decoded storage) is expanded once to see which of the wanted
addresses it holds and at which offsets; numpy then finds the ordinals of those
rows among millions and turns them into item indices.  This is how
``continue``/``reverse-continue`` find the nearest breakpoint hit and how
``find --address``/``--line`` list executions; ``find --function`` reads the
call forest's entry column instead (named_calls.py says which function entries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..decode.forest_builder import ASYNCHRONOUS
from .movement import NO_MORE_HISTORY, Movement

if TYPE_CHECKING:
    from ..decode.decoded_thread import DecodedThread
    from ..decode.expand import BlockExpander
    from .thread_history import ThreadHistory

_ADDRESSES = range(2**64)  # what the forest's uint64 entry column can hold


@dataclass(frozen=True)
class Match:
    """One execution: the item where it starts, its timestamp (None without timing), function entry, call
    depth, and the PLT stub a call went through (None for a direct call, or an execution that is no call)."""

    index: int
    tsc: int | None
    function: int | None
    depth: int
    stub: int | None = None


def hits(decoded: DecodedThread, expander: BlockExpander, addresses: Iterable[int]) -> np.ndarray:
    """Sorted item indices (a numpy array) of every execution of any of ``addresses``."""
    wanted = set(addresses)
    found = []
    for part, base in zip(decoded.parts, decoded.part_starts, strict=True):
        offsets = {}
        for row in range(len(part.block_ips)):
            size = part.block_sizes[row]
            if size:
                inside = [k for k, a in enumerate(expander.addresses(part.block_ips[row], size)) if a in wanted]
                if inside:
                    offsets[row] = inside
        if not offsets:
            continue
        ids = part.block_sequence
        sequence = np.frombuffer(ids, dtype=np.uint16 if ids.typecode == "H" else np.uint32)
        sizes = np.frombuffer(part.block_sizes, dtype=np.uint16)[sequence].astype(np.int64)
        sizes[sizes == 0] = 1  # a gap is one item
        starts = np.cumsum(sizes) - sizes + base
        for row, inside in offsets.items():
            at = starts[sequence == row]
            for offset in inside:
                found.append(at + offset)
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def first_hit(found: np.ndarray, start: int, target: int) -> int | None:
    """The first of ``found`` (sorted executions) a movement from ``start`` to ``target`` reaches, or None.

    Going forwards a breakpoint is reached at ``target`` too; going backwards, at ``target`` and
    everything after it (the instruction is reached before it runs, in either direction)."""
    if target > start:
        k = int(np.searchsorted(found, start, side="right"))
        return int(found[k]) if k < len(found) and found[k] <= target else None
    k = int(np.searchsorted(found, start, side="left")) - 1
    return int(found[k]) if k >= 0 and found[k] >= target else None


def continue_to(history: ThreadHistory, found: np.ndarray, reverse: bool = False) -> Movement:
    """The Movement to the nearest of ``found`` (executions of breakpoints) after (before) the position, or to the
    end (the beginning)."""
    position = history.position
    if reverse:
        k = int(np.searchsorted(found, position, side="left")) - 1
        if k >= 0:
            index = int(found[k])
            return Movement(index, None, history.map.address(index))
        return Movement(0, NO_MORE_HISTORY)
    k = int(np.searchsorted(found, position, side="right"))
    if k < len(found):
        index = int(found[k])
        return Movement(index, None, history.map.address(index))
    return Movement(history.end, NO_MORE_HISTORY)


def find_addresses(history: ThreadHistory, addresses: Iterable[int], limit: int | None = None) -> list[Match]:
    """Every execution of ``addresses`` (instructions, or the first instructions of a line), newest first."""
    found = hits(history.decoded, history.thread.expander, addresses)[::-1]
    return [_match(history, int(index)) for index in found[:limit]]


def find_calls(history: ThreadHistory, entries: Iterable[int], limit: int | None = None) -> list[Match]:
    """Every call of a function entered at one of ``entries``, newest first, each at the item of the function's
    first instruction (after the PLT stub it was called through: where a breakpoint on the function stops)."""
    forest = history.map.forest
    entries = [entry for entry in entries if entry in _ADDRESSES]
    wanted = np.array(sorted(entries), dtype=np.uint64)
    # a signal handler the software recorder entered with the step that delivered the signal: its frame begins
    # at the handler's second instruction
    seconds = np.array(sorted(entry + history.map.instruction_size(entry) for entry in entries), dtype=np.uint64)
    handlers = np.isin(forest.entry, seconds) & (np.asarray(forest.flags) & ASYNCHRONOUS != 0)
    rows = np.flatnonzero(np.isin(forest.entry, wanted) | handlers)
    indices = forest.entered(rows)
    newest_first = np.argsort(-indices, kind="stable")[:limit]
    rows, indices = rows[newest_first], indices[newest_first]
    decoded = history.decoded
    timestamp = decoded.timestamp if decoded.has_timestamps else lambda _index: None
    calls = [forest.call(row) for row in rows.tolist()]
    return [
        Match(index, timestamp(index), call.address, call.depth, call.stub)
        for index, call in zip(indices.tolist(), calls, strict=True)
    ]


def _match(history: ThreadHistory, index: int) -> Match:
    row = history.map.frame_row(index)
    forest = history.map.forest
    decoded = history.decoded
    return Match(
        index,
        decoded.timestamp(index) if decoded.has_timestamps else None,
        int(forest.entry[row]) if row >= 0 else None,
        int(forest.depth[row]) if row >= 0 else 0,
    )
