"""A thread's instructions, a stretch at a time, as numpy columns: item index, address, innermost frame.

The decoded trace stores blocks, not instructions: each distinct block's
addresses are expanded once into one table per part (a block row's addresses
are a slice of it), and a stretch of the block sequence is turned into instructions with
numpy.  With a filter, its verdict is taken once per table slot; block rows
with no wanted slot are dropped before expanding, so the instructions a
filter leaves out never become Python objects.
"""

import numpy as np

from ..decode.decoded_thread import CHECKPOINT_SPACING


class PartTable:
    """One part's block rows expanded: ``offsets[row]`` starts its slice of ``addresses``."""

    def __init__(self, part, expander, wanted=None):
        self.part = part
        sequence = part.block_sequence
        self.sequence = np.frombuffer(sequence, dtype=np.uint16 if sequence.typecode == "H" else np.uint32)
        self.sizes = np.frombuffer(part.block_sizes, dtype=np.uint16).astype(np.int64)
        self.offsets = np.cumsum(self.sizes) - self.sizes
        self.checkpoints = np.frombuffer(part.checkpoints, dtype=np.uint64).astype(np.int64)
        addresses = [
            a for ip, size in zip(part.block_ips, part.block_sizes, strict=True) if size
            for a in expander.addresses(ip, size)
        ]  # fmt: skip
        self.addresses = np.array(addresses, dtype=np.uint64)
        self.selected = self.rows_wanted = None
        if wanted is not None:
            self.selected = wanted(self.addresses)
            counts = np.concatenate(([0], np.cumsum(self.selected)))
            self.rows_wanted = counts[self.offsets + self.sizes] > counts[self.offsets]
            self.wanted_ordinals = np.flatnonzero(self.rows_wanted[self.sequence])

    def instructions(self, low, high):
        """``(item indices, addresses)`` of the (wanted) instructions among part items ``low``..``high``."""
        ordinal, first = self.part.block_at(low)
        # up to the first checkpointed ordinal after ``high``: enough, and no more than 64 ordinals beyond it
        stop = int(np.searchsorted(self.checkpoints, high, side="right")) * CHECKPOINT_SPACING
        if self.rows_wanted is not None and not self._any_wanted(ordinal, stop):
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        rows = self.sequence[ordinal:stop]
        items = np.maximum(self.sizes[rows], 1)  # a gap is one item
        starts = first + np.cumsum(items) - items
        count = int(np.searchsorted(starts, high, side="right"))
        rows, starts = rows[:count], starts[:count]
        if self.rows_wanted is not None:
            keep = self.rows_wanted[rows]
            rows, starts = rows[keep], starts[keep]
        sizes = self.sizes[rows]
        before = np.cumsum(sizes) - sizes  # the instructions of the blocks before each one
        at = np.arange(int(sizes.sum()), dtype=np.int64)
        indices = at + np.repeat(starts - before, sizes)
        slots = at + np.repeat(self.offsets[rows] - before, sizes)
        cut = slice(int(np.searchsorted(indices, low)), int(np.searchsorted(indices, high, side="right")))
        indices, slots = indices[cut], slots[cut]
        if self.selected is not None:
            keep = self.selected[slots]
            indices, slots = indices[keep], slots[keep]
        return indices, self.addresses[slots]

    def _any_wanted(self, start, stop):
        """Is any block at ordinals ``start``..``stop - 1`` one the filter wants?"""
        k = int(np.searchsorted(self.wanted_ordinals, start))
        return k < len(self.wanted_ordinals) and self.wanted_ordinals[k] < stop


class Instructions:
    """Instructions of a whole thread by absolute item index (the parts' tables are built on first use)."""

    def __init__(self, decoded, expander, wanted=None):
        self._decoded, self._expander, self._wanted = decoded, expander, wanted
        self._tables = {}

    def between(self, low, high):
        """``(item indices, addresses)`` of the (wanted) instructions among items ``low``..``high``."""
        found = []
        for k, (part, start) in enumerate(zip(self._decoded.parts, self._decoded.part_starts, strict=False)):
            part_low, part_high = max(low, start) - start, min(high, start + part.item_count - 1) - start
            if part_low > part_high:
                continue
            table = self._tables.get(k)
            if table is None:
                table = self._tables[k] = PartTable(part, self._expander, self._wanted)
            indices, addresses = table.instructions(part_low, part_high)
            found.append((indices + start, addresses))
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])


class Innermost:
    """The innermost call holding each item, for many items at once (a timeline of change points).

    The innermost call changes where a call begins (to it) and after a call's
    last item (to the nearest enclosing call still open there, or none).
    """

    def __init__(self, forest):
        first, last = forest.first.astype(np.int64), forest.last.astype(np.int64)
        parent = forest.parent.astype(np.int64)
        after = parent.copy()  # the call open after each call's last item: its nearest ancestor still open
        while True:
            closed = np.flatnonzero(after >= 0)
            closed = closed[last[after[closed]] <= last[closed]]
            if not len(closed):
                break
            after[closed] = parent[after[closed]]
        rows = np.arange(len(first), dtype=np.int64)
        points = np.concatenate(([-1], last + 1, first))  # -1: before the first call, none is open
        # at one item: the calls' ends before the calls beginning there, and outer calls before inner ones
        depth = forest.depth.astype(np.int64)
        order = np.lexsort((np.concatenate(([-1], np.full(len(first), -1), depth)), points))
        self._points = points[order]
        inner = np.concatenate(([-1], after, rows))[order]
        self._depths = np.where(inner >= 0, depth[np.maximum(inner, 0)], -1)  # the innermost call's, from there on

    def depth(self, indices):
        """The innermost call's depth at each item of ``indices`` (sorted; -1 where no call holds it)."""
        if not len(indices):
            return indices
        start = int(np.searchsorted(self._points, indices[0], side="right")) - 1
        stop = int(np.searchsorted(self._points, indices[-1], side="right"))
        takes_effect = np.searchsorted(indices, self._points[start + 1 : stop])  # change points in this stretch
        counts = np.diff(np.concatenate(([0], takes_effect, [len(indices)])))
        return np.repeat(self._depths[start:stop], counts)
