"""Runs of regular branches, built in bulk with numpy instead of one Python visit each.

Most of a long trace is regular: a call opens a frame, the matching return
lands at that call's return address, jumps stay inside their function, and
nothing else happens in between.  Visiting a million such calls one by one
costs seconds; their frames follow from the branch sequence alone: depth is a
running sum of +1 per call and -1 per return, a return closes the call it
pairs with at the same depth, and a call's parent is the latest call one
level up.  Everything else is irregular and left to the reference visit
(forest_builder.py), which alone knows the open frames: gaps, branches near a
change of tracing (an event), blocks holding a tail jump, calls into a PLT
stub, jumps that may leave their function, and returns that land elsewhere
than their call's return address or close a frame opened before the run.  A
run is a stretch of regular branches between irregular ones; starting from
whatever frame is innermost there, it opens a frame per call, closes the
paired ones and leaves the unpaired ones open, exactly as the visit would.

forest_runs.c finds the runs in one pass with a stack (compiled_runs.py);
the numpy passes here are its fallback where it is not built, and find the
same runs.
"""

import numpy as np

from . import compiled_runs
from .branches import CALL, JUMP, RETURN

CHUNK = 1 << 16  # branches judged at once, bounding the temporaries; a run cut at a chunk's end is visited there


class PartRows:
    """What the runs need to know of one part's rows (distinct blocks), found once per part."""

    def __init__(self, builder, branches):
        count, ips = len(branches.ips), branches.ips
        self.ips = np.frombuffer(ips, dtype=np.uint64)
        self.tail = np.zeros(count, dtype=bool)
        self.tail[list(branches.tail_rows)] = True
        self.stub = np.zeros(count, dtype=bool)  # a PLT stub's: a call to it is followed to its function
        if builder.plt is not None:
            self.stub[[row for row in range(count) if builder.plt.contains(ips[row])]] = True
        self.returns = np.zeros(count, dtype=np.uint64)  # a call's return address
        for row in np.flatnonzero(np.frombuffer(branches.part.row_classes, dtype=np.uint8) == CALL).tolist():
            site, size, _ = builder.blocks.of(row, branches.part)
            self.returns[row] = site + size
        self.jumps = {}  # (row, target row) -> does a jump from that block there stay inside its function?


class RegularRuns:
    """The regular runs among branches ``low``..``high`` of a part (``bounds``: ``(start, stop)``, in visit order).

    Branches are numbered by their place among the ordinals to visit.  The compiled walk leaves its
    columns in the builder's scratch memory: they last until the next chunk's runs are found.
    """

    def __init__(self, builder, branches, rows, low, high):
        self.builder, self.branches = builder, branches
        irregular = np.zeros(high - low, dtype=bool)
        irregular[_near_events(builder, branches, low, high)] = True
        items = np.int64 if builder.nodes.first.typecode == "q" else np.int32  # the forest's item indices
        found = compiled_runs.library()
        if found is None:
            bounds, *calls = self._numpy_walk(rows, low, high, irregular, items)
        else:
            walk = compiled_runs.Walk(found, branches, rows, builder.scratch)
            irregular[self._leaving_jumps(rows, low, walk.mark(low, high, irregular))] = True
            bounds, *calls = walk.walk(low, high, irregular, items)
        self.bounds = [(start + low, stop + low) for start, stop in bounds.tolist()]
        self.calls, self.first, self.last, self.levels, self.parents, self.entries = calls
        self.calls += low  # per regular call: its number, its frame's items, level, parent and function's entry

    def _numpy_walk(self, rows, low, high, irregular, items):
        """What compiled_runs.Walk.walk finds, in numpy passes: pair returns with calls by depth, make the
        returns that land elsewhere than their call's return address irregular, and pair again until none does."""
        branches = self.branches
        ordinals = branches.ordinals[low:high]
        classes, sequence = branches.classes[ordinals], branches.sequence[ordinals]
        next_rows = branches.sequence[np.minimum(ordinals + 1, branches.count - 1)]
        irregular |= (classes != CALL) & (classes != RETURN) & (classes != JUMP)
        irregular |= _unfollowed(branches, ordinals) | rows.tail[sequence]
        irregular |= (classes == CALL) & rows.stub[next_rows]
        irregular[self._leaving_jumps(rows, low, np.flatnonzero((classes == JUMP) & ~irregular))] = True
        steps = (classes == CALL).view(np.int8) - (classes == RETURN).view(np.int8)
        while True:
            regular = ~irregular
            moving, levels, (opens, closes) = _pairs(steps, regular)
            good = rows.ips[next_rows[moving[closes]]] == rows.returns[sequence[moving[opens]]]
            wrong = regular & (steps < 0)  # landing elsewhere than their call's return, or closing no call of the run
            wrong[moving[closes[good]]] = False
            if not wrong.any():
                break
            irregular |= wrong
        ends = branches.ends[ordinals[moving]]
        closed = np.full(len(moving), -1, dtype=np.int64)
        closed[opens] = ends[closes]
        opening = steps[moving] > 0
        calls, levels = moving[opening], levels[opening]
        entries = rows.ips[next_rows[calls]]  # the called functions' entry addresses
        first, last = (ends[opening] + 1).astype(items), closed[opening].astype(items)
        return _bounds(regular), calls, first, last, levels, _parents(levels).astype(np.int32), entries

    def add(self, start, stop):
        """Open and close the frames of the run ``start``..``stop`` above the innermost frame, as a visit would."""
        builder, branches = self.builder, self.branches
        low, high = np.searchsorted(self.calls, (start, stop)).tolist()
        if low == high:
            return  # only jumps inside their function
        nodes, below = builder.nodes, builder.stack[-1]
        node, count, parents = len(nodes.first), high - low, self.parents[low:high]
        append_column(nodes.first, self.first[low:high])
        append_column(nodes.last, self.last[low:high])
        append_column(nodes.parent, np.where(parents >= 0, parents + (node - low), below))
        append_column(nodes.level, self.levels[low:high] + (builder._level_of(below) + 1))
        append_column(nodes.entry, self.entries[low:high])
        nodes.flags.frombytes(bytes(count))
        for k in np.flatnonzero(self.last[low:high] < 0).tolist():  # left open, innermost last
            row = int(branches.sequence[branches.ordinals[self.calls[low + k]]])
            site, size, _ = builder.blocks.of(row, branches.part)
            builder.stack.append(node + k)
            builder.returns.append(site + size)
            builder.call_sites.append(site)
            builder.states.append(0)

    def _leaving_jumps(self, rows, low, jumps):
        """Of ``jumps`` (branch numbers from ``low``), those that may leave their function (a tail call, a longjmp);
        each (block, target) is judged once a part."""
        if not len(jumps):
            return jumps
        branches = self.branches
        ordinals = branches.ordinals[jumps + low]
        targets = branches.sequence[np.minimum(ordinals + 1, branches.count - 1)]
        width = len(rows.ips)
        kinds, which = np.unique(branches.sequence[ordinals] * np.int64(width) + targets, return_inverse=True)
        stays = [self._stays(rows, *divmod(kind, width)) for kind in kinds.tolist()]
        return jumps[~np.array(stays, dtype=bool)[which.ravel()]]

    def _stays(self, rows, row, target_row):
        found = rows.jumps.get((row, target_row))
        if found is None:
            builder = self.builder
            address, target = builder.blocks.of(row, self.branches.part)[0], self.branches.ips[target_row]
            there = builder.functions.containing(target)
            inside = there is None or there == builder.functions.containing(address)
            found = rows.jumps[row, target_row] = inside and not builder.blocks.into_stub(address, target)
        return found


def _near_events(builder, branches, low, high):
    """Branches ``low``..``high`` (numbered from ``low``) with a resumption of tracing since the branch before,
    or right after an event: never regular, so that the visit handles every event in its place."""
    ends, sizes, ordinals = branches.ends, branches.sizes, branches.ordinals[low:high]
    since = int(ends[branches.ordinals[low - 1]] - sizes[branches.ordinals[low - 1]]) + 1 if low else -1
    until = int(ends[ordinals[-1]]) + 1
    resumed, either = builder.resumed_items, builder.event_items
    resumed = resumed[np.searchsorted(resumed, since, "right") : np.searchsorted(resumed, until, "right")]
    holding = np.searchsorted(ends, resumed)  # the ordinal of the block holding the item the resumption comes before
    inside = holding < len(ends)
    holding[inside] += ends[holding[inside]] - sizes[holding[inside]] + 1 < resumed[inside]  # not its first item
    stopped = either[np.searchsorted(either, since, "right") : np.searchsorted(either, until, "right")] - 1
    followed = np.searchsorted(ends, stopped)  # the ordinal of the block an event follows
    found = np.searchsorted(ordinals, np.concatenate((holding, followed)).astype(ordinals.dtype))  # ordinals uncast
    return found[found < len(ordinals)]


def _unfollowed(branches, ordinals):
    """Branches that are gaps, or that no block follows (a gap next, or the part's end)."""
    gaps = branches.gaps
    return gaps[ordinals] | gaps[np.minimum(ordinals + 1, branches.count - 1)] | (ordinals + 1 == branches.count)


def append_column(column, values):
    """Append numpy ``values`` to an array.array ``column``, converted to its item type."""
    kind = {"q": np.int64, "i": np.int32, "Q": np.uint64, "B": np.uint8}[column.typecode]
    column.frombytes(memoryview(np.ascontiguousarray(values, dtype=kind)).cast("B"))


def _pairs(steps, regular):
    """The regular calls and returns, their levels, and which of them ``(opens, closes)`` pair up.

    A level is the depth below the run's first frame (a call's before it, a return's after it); a
    return pairs with the call just before it among those of its run and level, in trace order.
    """
    runs = np.cumsum(regular & ~np.concatenate(([False], regular[:-1])), dtype=np.int32)
    moving = np.flatnonzero(regular & (steps != 0))
    steps, runs = steps[moving], runs[moving]
    depth = np.cumsum(steps, dtype=np.int32)
    heads = np.flatnonzero(np.concatenate(([True], runs[1:] != runs[:-1]))) if len(runs) else moving
    restart = np.zeros(len(steps), dtype=np.int32)
    restart[heads] = np.diff(depth[heads] - steps[heads], prepend=0)  # each run starts at depth 0
    depth -= np.cumsum(restart, dtype=np.int32)
    levels = depth - (steps > 0)
    order = _stable_order(levels)
    level, run, opening = levels[order], runs[order], steps[order] > 0
    closing = np.flatnonzero(opening[:-1] & ~opening[1:] & (level[1:] == level[:-1]) & (run[1:] == run[:-1])) + 1
    return moving, levels, (order[closing - 1], order[closing])


def _stable_order(levels):
    """A stable argsort of small integers (numpy sorts 16-bit keys by radix)."""
    if not len(levels):
        return np.zeros(0, dtype=np.int64)
    low = int(levels.min())
    if int(levels.max()) - low < 1 << 16:
        return np.argsort((levels - low).astype(np.uint16), kind="stable")
    return np.argsort(levels, kind="stable")


def _parents(levels):
    """Per call: the number of the call it is made from (the latest one level up), -1 for the run's first frame."""
    if not len(levels):
        return np.zeros(0, dtype=np.int64)
    order = _stable_order(levels)
    width = np.int64(len(levels))
    keys = levels[order] * width + order
    found = np.searchsorted(keys, (levels - 1) * width + np.arange(len(levels))) - 1
    return np.where(levels > 0, order[np.maximum(found, 0)], -1)


def _bounds(regular):
    """The ``(start, stop)`` of every stretch of regular branches, as the rows of an array."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], regular.view(np.int8), [0]))))
    return edges.reshape(-1, 2)
