"""A thread's decoded entries as whole-thread numpy columns, to count instructions by address without expanding them.

A profile by line or module needs how often each instruction address ran in a
range.  Each entry of the decoded storage (one run of a block) runs its
block's instructions once, so counting entries per distinct block and spreading
each block's count over its addresses is exact; only the few entries a range
cuts in two are taken instruction by instruction.  A 29M-instruction trace is
about 3M entries: a cumulative sum and a bincount, not 29M addresses.
"""

import numpy as np


class Timeline:
    """Every entry of a DecodedThread in item order: its distinct block (-1: a gap) and first item.

    Blocks are numbered once across the decoded parts (each part has its own
    block table); ``addresses[offset[b]:offset[b + 1]]`` are block ``b``'s
    instruction addresses, ``flat_block`` the block of each of those.
    """

    def __init__(self, decoded, expander):
        part_ips, part_sizes, part_entries, row_base = [], [], [], 0
        for part in decoded.parts:
            part_ips.append(_column(part.block_ips, np.uint64))
            part_sizes.append(_column(part.block_sizes, np.uint16).astype(np.int64))
            part_entries.append(_column(part.entries, np.uint16).astype(np.int64) + row_base)
            row_base += len(part.block_ips)
        ips, sizes, rows = np.concatenate(part_ips), np.concatenate(part_sizes), np.concatenate(part_entries)
        code = (ips << np.uint64(16)) | sizes.astype(np.uint64)
        code = np.where(sizes > 0, code, np.uint64(0))  # gap rows hold a gap number, not an address
        distinct, row_block = np.unique(code, return_inverse=True)
        has_gap_row = bool(len(distinct)) and distinct[0] == 0
        row_block = row_block.astype(np.int64) - int(has_gap_row)  # gaps -> -1
        distinct = distinct[int(has_gap_row) :]
        self.block_size = (distinct & np.uint64(0xFFFF)).astype(np.int64)
        self.offset = np.concatenate(([0], np.cumsum(self.block_size)))
        self.addresses = np.fromiter(
            (a for c in distinct.tolist() for a in expander.addresses(c >> 16, c & 0xFFFF)),
            dtype=np.uint64,
            count=int(self.offset[-1]),
        )
        self.flat_block = np.repeat(np.arange(len(distinct)), self.block_size)
        self.entry_block = row_block[rows].astype(np.int32)
        items = np.maximum(sizes[rows], 1)  # a gap is one item
        self.entry_start = np.cumsum(items) - items
        self.entry_items = items.astype(np.int32)

    def flat_index(self, items):
        """Where in ``addresses`` the instruction at each item is (items must not be gaps)."""
        items = np.asarray(items, dtype=np.int64)
        entry = np.searchsorted(self.entry_start, items, side="right") - 1
        return self.offset[self.entry_block[entry]] + items - self.entry_start[entry]

    def split(self, first, last):
        """``(whole, loose)``: the entries of blocks lying wholly in items ``first..last``, and the
        instructions (item indices) of the blocks the range cuts."""
        low = int(np.searchsorted(self.entry_start, first, side="right")) - 1
        high = int(np.searchsorted(self.entry_start, last, side="right")) - 1
        entries = np.arange(low, high + 1)
        blocks = self.entry_block[entries]
        starts = self.entry_start[entries]
        ends = starts + self.entry_items[entries] - 1
        cut = (starts < first) | (ends > last)
        loose = [
            np.arange(max(int(s), first), min(int(e), last) + 1)
            for s, e, b in zip(starts[cut].tolist(), ends[cut].tolist(), blocks[cut].tolist(), strict=True)
            if b >= 0
        ]
        return entries[~cut & (blocks >= 0)], np.concatenate(loose) if loose else np.zeros(0, np.int64)

    def items_of(self, entries):
        """Every item of ``entries`` (whole blocks), in order."""
        starts = self.entry_start[entries]
        counts = self.entry_items[entries].astype(np.int64)
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return np.arange(int(counts.sum())) + shift


def _column(values, dtype):
    """An array.array as numpy values (its own item type; ``dtype`` when it is empty)."""
    return np.frombuffer(values, dtype=values.typecode) if len(values) else np.zeros(0, dtype=dtype)
