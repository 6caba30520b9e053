"""A thread's block sequence as whole-thread numpy columns, to count instructions by address without expanding them.

A profile by line or module needs how often each instruction address ran in a
range.  Each ordinal of the decoded block sequence (one run of a block) runs
its block's instructions once, so counting ordinals per distinct block and
spreading each block's count over its addresses is exact; only the few blocks
a range cuts in two are taken instruction by instruction.  A 29M-instruction
trace is about 3M ordinals: a cumulative sum and a bincount, not 29M addresses.
"""

import numpy as np


class Timeline:
    """Every ordinal of a DecodedThread's block sequences in item order: its distinct block (-1: a gap) and first item.

    Blocks are numbered once across the decoded parts (each part has its own
    block table); ``addresses[offset[b]:offset[b + 1]]`` are block ``b``'s
    instruction addresses, ``flat_block`` the block of each of those.
    """

    def __init__(self, decoded, expander):
        part_ips, part_sizes, part_sequences, row_base = [], [], [], 0
        for part in decoded.parts:
            part_ips.append(_column(part.block_ips, np.uint64))
            part_sizes.append(_column(part.block_sizes, np.uint16).astype(np.int64))
            part_sequences.append(_column(part.block_sequence, np.uint16).astype(np.int64) + row_base)
            row_base += len(part.block_ips)
        ips, sizes, rows = np.concatenate(part_ips), np.concatenate(part_sizes), np.concatenate(part_sequences)
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
        self.block_by_ordinal = row_block[rows].astype(np.int32)
        items = np.maximum(sizes[rows], 1)  # a gap is one item
        self.start_by_ordinal = np.cumsum(items) - items
        self.items_by_ordinal = items.astype(np.int32)

    def flat_index(self, items):
        """Where in ``addresses`` the instruction at each item is (items must not be gaps)."""
        items = np.asarray(items, dtype=np.int64)
        ordinal = np.searchsorted(self.start_by_ordinal, items, side="right") - 1
        return self.offset[self.block_by_ordinal[ordinal]] + items - self.start_by_ordinal[ordinal]

    def split(self, first, last):
        """``(whole, loose)``: the ordinals of blocks lying wholly in items ``first..last``, and the
        instructions (item indices) of the blocks the range cuts."""
        low = int(np.searchsorted(self.start_by_ordinal, first, side="right")) - 1
        high = int(np.searchsorted(self.start_by_ordinal, last, side="right")) - 1
        ordinals = np.arange(low, high + 1)
        blocks = self.block_by_ordinal[ordinals]
        starts = self.start_by_ordinal[ordinals]
        ends = starts + self.items_by_ordinal[ordinals] - 1
        cut = (starts < first) | (ends > last)
        loose = [
            np.arange(max(int(s), first), min(int(e), last) + 1)
            for s, e, b in zip(starts[cut].tolist(), ends[cut].tolist(), blocks[cut].tolist(), strict=True)
            if b >= 0
        ]
        return ordinals[~cut & (blocks >= 0)], np.concatenate(loose) if loose else np.zeros(0, np.int64)

    def items_of(self, ordinals):
        """Every item of ``ordinals`` (whole blocks), in order."""
        starts = self.start_by_ordinal[ordinals]
        counts = self.items_by_ordinal[ordinals].astype(np.int64)
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return np.arange(int(counts.sum())) + shift


def _column(values, dtype):
    """An array.array as numpy values (its own item type; ``dtype`` when it is empty)."""
    return np.frombuffer(values, dtype=values.typecode) if len(values) else np.zeros(0, dtype=dtype)
