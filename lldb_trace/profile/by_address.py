"""Instructions and time per row of the instruction's own address (its line or module), counted by block.

Each row also gets the part of its own instructions (and time) run outside
every stretch in which it is on the stack (see Intervals): an inclusive
figure adds that part to the stretches' own counts, so that an instruction
of a line run inside a call made from that same line (recursion) counts once.

Most ordinals are whole blocks inside the range that lie wholly inside or
wholly outside each such stretch, and whose time changes, if at all, only
after their last instruction (timing packets come between blocks); they are
counted per block.  The others (the range's cut ends, a stretch boundary
inside a block, a time change inside one) are taken instruction by
instruction.
"""

from dataclasses import dataclass

import numpy as np

from ..analysis import ItemRange

CHUNK_ITEMS = 1 << 22  # 4M items: about 0.5M ordinals of columns at a time


@dataclass
class AddressCounts:
    """Per row: its instructions, those outside its stretches, and the same for time (zeros without timing)."""

    exclusive: np.ndarray
    outside: np.ndarray
    exclusive_time: np.ndarray
    outside_time: np.ndarray


def count_by_address(timeline, item_range, own, stretches, times, rows):
    """AddressCounts over ``item_range`` for ``own`` (the row of each of ``timeline.addresses``).

    Counted CHUNK_ITEMS items at a time (the counts add up), so that the per-ordinal columns of one chunk,
    not of the whole trace, are in memory at once.
    """
    total = AddressCounts(*(np.zeros(rows, np.int64) for _ in range(4)))
    for first in range(item_range.first, item_range.last + 1, CHUNK_ITEMS):
        chunk = ItemRange(first, min(first + CHUNK_ITEMS - 1, item_range.last))
        counts = _count_chunk(timeline, chunk, own, stretches, times, rows)
        for name in ("exclusive", "outside", "exclusive_time", "outside_time"):
            getattr(total, name)[:] += getattr(counts, name)
    return total


def _count_chunk(timeline, item_range, own, stretches, times, rows):
    whole, loose = timeline.split(item_range.first, item_range.last)
    blocks = timeline.block_by_ordinal[whole].astype(np.int64)
    starts = timeline.start_by_ordinal[whole]
    ends = starts + timeline.block_size[blocks] - 1
    slow = np.zeros(len(whole), dtype=bool)
    if times.known:
        slow |= times.at(ends) != times.at(starts)
    pairs = _stretch_pairs(timeline, blocks, starts, ends, own, stretches, slow, rows)
    pair_block_at, pair_row, pair_count, inside = pairs
    fast = ~slow
    block_runs = np.bincount(blocks[fast], minlength=len(timeline.block_size))
    exclusive = sums(own, block_runs[timeline.flat_block], rows)
    kept = inside & fast[pair_block_at]
    outside = exclusive - sums(pair_row[kept], pair_count[kept], rows)
    exclusive_time, outside_time = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    if times.known:
        duration = times.at(ends[fast] + 1) - times.at(starts[fast])
        timed = np.flatnonzero(duration)
        last_row = own[timeline.offset[blocks[fast][timed] + 1] - 1]  # the time passes at the block's last instruction
        out = ~stretches.inside(last_row, ends[fast][timed])
        exclusive_time += sums(last_row, duration[timed], rows)
        outside_time += sums(last_row[out], duration[timed][out], rows)
    items = np.concatenate((loose, timeline.items_of(whole[slow])))
    item_rows = own[timeline.flat_index(items)]
    out = ~stretches.inside(item_rows, items)
    exclusive += np.bincount(item_rows, minlength=rows)
    outside += np.bincount(item_rows[out], minlength=rows)
    if times.known:
        duration = times.at(items + 1) - times.at(items)
        exclusive_time += sums(item_rows, duration, rows)
        outside_time += sums(item_rows[out], duration[out], rows)
    return AddressCounts(exclusive, outside, exclusive_time, outside_time)


def _stretch_pairs(timeline, blocks, starts, ends, own, stretches, slow, rows):
    """For each of ``blocks`` and each row with stretches among its instructions: ``(where the block is in
    ``blocks``, row, instructions of that row in the block, whether the block lies inside a stretch of the
    row)``; blocks that a stretch boundary crosses are marked in ``slow``."""
    with_stretches = np.flatnonzero(stretches.has_key(own))
    code = timeline.flat_block[with_stretches] * rows + own[with_stretches]
    pairs, pair_counts = np.unique(code, return_counts=True)
    pair_block, pair_row = pairs // rows, pairs % rows
    per_block = np.bincount(pair_block, minlength=len(timeline.block_size))
    block_first = np.cumsum(per_block) - per_block
    per_listed = per_block[blocks]
    block_at = np.repeat(np.arange(len(blocks)), per_listed)
    pair = np.arange(len(block_at)) + np.repeat(block_first[blocks] - (np.cumsum(per_listed) - per_listed), per_listed)
    inside, crossing = stretches.cover(pair_row[pair], starts[block_at], ends[block_at])
    slow[block_at[crossing]] = True
    return block_at, pair_row[pair], pair_counts[pair], inside


def sums(rows, values, count):
    """Per row, the sum of ``values`` (int64, exact)."""
    total = np.zeros(count, dtype=np.int64)
    np.add.at(total, rows, values)
    return total
