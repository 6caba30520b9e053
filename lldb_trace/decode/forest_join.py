"""Joining a piece's call forest (piece_forest.py) to the forest the pieces before it built.

The builder that visited the pieces before holds the frames open where this
piece begins: the piece's outer frame j is its open frame j from the top.
Every assumption the piece made of them is checked against those frames;
if one fails, the caller builds the piece again with them (forest_builder),
and nothing was changed.  If all hold, the piece's nodes are the single
pass's: they are appended with their item indices, node ids, levels and
trees moved to the whole forest's, the outer frames it closed get their
last item, and its open frames go on the builder's stack.
"""

import mmap
from array import array
from bisect import bisect_right

import numpy as np

from ..libipt import EventType
from .piece_forest import COLUMNS, outer_frame

_TRACING = (EventType.ENABLED, EventType.DISABLED, EventType.ASYNC_DISABLED)


def joins(builder, piece, base, next_ip):
    """Do the piece's assumptions hold on ``builder``'s open frames, and did its last branch go to ``next_ip``?"""
    if piece.next_ip != next_ip:
        return False
    if not piece.outer:
        return not builder.stack and not len(builder.nodes.first) and builder.next_event == 0 and base == 0
    if not builder.stack:
        return False  # the single pass starts a new tree here: the piece assumed frames were open
    frames = _Frames(builder)
    return all(frames.holds(assumption) for assumption in piece.assumed)


def join(builder, piece, base, item_count):
    """Append ``piece`` (which ``joins`` accepted), whose items begin at ``base``, to ``builder``'s forest."""
    nodes = builder.nodes
    offset, top = len(nodes.first), len(builder.stack) - 1
    real = list(builder.stack)  # the outer frames' real nodes: frame j is real[top - j]
    continued = len(nodes.tree_levels) - 1  # the tree the open frames belong to (tree 0 of the piece)
    level = nodes.level[real[top]] if piece.outer else 0
    _append_nodes(nodes, piece, base, offset, real, top, continued, level)
    for frame, item, flags in piece.outer_pops:
        nodes.last[real[top - frame]] = item + base
        nodes.flags[real[top - frame]] |= flags
    kept = top + 1 - len(piece.outer_pops)
    if piece.closed_at is not None:
        for node in real[:kept]:
            nodes.last[node] = piece.closed_at + base
        kept = 0
    _restack(builder, piece, real, top, kept, offset)
    builder.untraced_callees.update(item + base for item in piece.untraced_callees)
    builder.next_event = bisect_right(builder.events, base + item_count)


def _append_nodes(nodes, piece, base, offset, real, top, continued, level):
    """Append the piece's columns, moved to the whole forest's items, node ids, levels and trees.

    Each column is copied once, onto the forest's, and moved there (in memory just written, not in the
    file a child wrote); the trace's first piece is the forest's start as it is, and becomes its columns
    without a copy.
    """
    adopt = not piece.outer and not len(nodes.first)
    outer_parents = np.array(real[::-1], dtype=np.int32)  # outer frame j's node
    continued_end = piece.tree_starts[1] if len(piece.tree_starts) > 1 else len(piece.first)
    for name in COLUMNS:
        column = getattr(nodes, name)
        values, done = _numpy(piece, name, column.typecode), len(column)
        if adopt:
            own = getattr(piece, name)
            if not isinstance(own, array) or own.typecode != column.typecode:
                own = array(column.typecode)
                own.frombytes(values)
            setattr(nodes, name, own)
        else:
            column.frombytes(memoryview(values).cast("B"))
            _move(name, np.frombuffer(column, dtype=column.typecode)[done:], base, offset, outer_parents)
            if name == "level" and piece.outer:  # its tree 0 goes on the frames the pieces before left open
                np.frombuffer(column, dtype=column.typecode)[done : done + continued_end] += level
        del values
        _forget(piece, name)
    _append_trees(nodes, piece, offset, continued, level)
    nodes.extra.update(_moved_pairs(piece.extra, offset, 0))
    nodes.entered.update(_moved_pairs(piece.entered, offset, base))
    nodes.call_items.update(_moved_pairs(piece.call_items, offset, base))
    for node, item in piece.odd_call_items:
        nodes.call_items[node + offset] = _call_item(nodes, item, real, top)


def _forget(piece, name):
    """Free a piece's column once appended: its array, or its pages of the file a child wrote."""
    setattr(piece, name, None)
    mapping, offset, size = getattr(piece, "mapped", {}).pop(name, (None, 0, 0))
    start, end = -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE, (offset + size) // mmap.PAGESIZE * mmap.PAGESIZE
    if mapping is not None and end > start:
        mapping.madvise(mmap.MADV_REMOVE, start, end - start)


def _move(name, values, base, offset, outer_parents):
    """Move a piece's column ``name``, appended as ``values``, to the forest's items and node ids."""
    if name == "first":
        values += base
    elif name == "last":
        np.add(values, base, out=values, where=values >= 0)  # -1: still open
    elif name == "parent":
        outer = np.flatnonzero(values <= -2)
        np.add(values, offset, out=values, where=values >= 0)
        values[outer] = outer_parents[-2 - values[outer]]


def _moved_pairs(pairs, offset, base):
    """A piece's pairs (piece_forest._pairs) as (node, value): the nodes moved by ``offset``, the values by ``base``."""
    half = len(pairs) // 2
    return zip([node + offset for node in pairs[:half]], [value + base for value in pairs[half:]], strict=True)


def _append_trees(nodes, piece, offset, continued, level):
    """The piece's trees after the forest's: its tree 0 goes on the tree left open, the others are new."""
    starts, levels = piece.tree_starts, piece.tree_levels
    if piece.outer:
        nodes.tree_levels[continued] = min(nodes.tree_levels[continued], levels[0] + level)
        starts, levels = starts[1:], levels[1:]
    nodes.tree_starts.extend(start + offset for start in starts)
    nodes.tree_levels.extend(levels)


def _call_item(nodes, item, real, top):
    """The call item of a switched frame (None), or of a tail call out of an outer frame: that frame's."""
    if item is None:
        return None
    node = real[top - item[1]]
    return nodes.call_items.get(node, nodes.first[node] - 1)


def _restack(builder, piece, real, top, kept, offset):
    """The builder's open frames after the piece: the outer ones it left open, then its own."""
    returns, call_sites, states = builder.returns[:kept], builder.call_sites[:kept], builder.states[:kept]
    stack = real[:kept]
    for k, node in enumerate(piece.stack):
        if outer_frame(node) is not None:
            continue  # the innermost outer frame still open: already in stack
        stack.append(node + offset)
        returns.append(_real_value(builder.returns, piece.returns[k], top))
        call_sites.append(_real_value(builder.call_sites, piece.call_sites[k], top))
        states.append(piece.states[k])
    builder.stack, builder.returns, builder.call_sites, builder.states = stack, returns, call_sites, states


def _real_value(column, value, top):
    """A piece's return address or call site, with an outer frame's (``["outer", j]``) taken from ``column``."""
    return column[top - value[1]] if isinstance(value, list) else value


def _numpy(piece, name, typecode):
    """The piece's column ``name`` (an array, or numpy values in the file a child wrote) as numpy values of
    ``typecode`` (the forest's): itself where it is of that type already, else a converted copy (a piece
    narrower than the whole forest)."""
    values = getattr(piece, name)
    if isinstance(values, array):
        values = np.frombuffer(values, dtype=values.typecode) if len(values) else np.zeros(0, values.typecode)
    return values if values.dtype == np.dtype(typecode) else values.astype(typecode)


class _Frames:
    """The open frames a piece begins in, as its assumptions name them (outer frame j: the j-th from the top)."""

    def __init__(self, builder):
        self.builder, self.top = builder, len(builder.stack) - 1

    def holds(self, assumption):
        kind, frame, *more = assumption
        builder, depth = self.builder, self.top - frame
        if depth < 0:  # no such frame: nothing stands in a function there, but it has no return either
            return kind in ("land", "signal")
        if kind == "inner":
            return depth >= 1
        if kind == "return":
            return builder.returns[depth] == more[0]
        if kind == "state":
            return not builder.states[depth]
        if kind == "land":
            return not self._stands_in(depth, tuple(more[0]))  # (start, end), a list once sent as JSON
        if kind == "signal":
            return not any(builder._is_signal_frame(below, more[0]) for below in range(depth, -1, -1))
        return False

    def _stands_in(self, depth, function):
        """Is a frame from ``depth`` outwards in ``function`` (its pc: the call site of the frame above it)?"""
        builder = self.builder
        for below in range(depth, -1, -1):
            pc = builder.call_sites[below + 1]
            if pc is not None and builder.functions.containing(pc) == function:
                return True
        return False


class PieceJoins:
    """The parts of a decoded thread that came with a PieceForest, joined as the build reaches them.

    A part is joined only where no event sits at either of its ends: a single pass handles such an
    event with both parts' frames at once (tracing stopped at one part's end and resumed at the next's).
    """

    def __init__(self, decoded, task):
        self.parts, self.task = decoded.parts, task

    def joined(self, builder, k, base, next_ip):
        """Join part ``k``'s PieceForest (forgetting it) if it joins; False leaves the part to the builder."""
        part = self.parts[k]
        piece, part.piece_forest = part.piece_forest, None
        if piece is None or not self._quiet_end(k - 1) or not self._quiet_end(k):
            return False
        if not joins(builder, piece, base, next_ip):
            return False
        join(builder, piece, base, part.item_count)
        self.task.at(base + part.item_count)
        return True

    def _quiet_end(self, k):
        """Did tracing neither stop nor resume where part ``k`` ends and part ``k + 1`` begins?"""
        if k < 0 or k + 1 >= len(self.parts):
            return True
        ending, beginning = self.parts[k], self.parts[k + 1]
        return not _changes_tracing(ending, ending.item_count) and not _changes_tracing(beginning, 0)


def _changes_tracing(part, index):
    """Did tracing stop or resume at item ``index`` of ``part`` (the events the call forest follows)?"""
    return any(event.type in _TRACING for event in part.events_before(index))
