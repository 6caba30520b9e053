"""Recursion counted once: the outermost frame of each key, and whether items lie inside one.

A function's inclusive count is the instructions run while it is on the
stack.  Summing every frame's inclusive count would count a recursive
function's inner calls again inside the outer ones; summing only the frames
no frame of the same key encloses counts each instruction once.  Frames
nest (a frame's items hold its callees'), so within one key, in order of
first item, a frame is enclosed exactly when it starts before the furthest
end reached by the frames before it: one stable sort and a running maximum.
"""

import numpy as np


def outermost(keys, first, last, span):
    """Indices of the frames (``keys`` -1: none) that no frame of the same key encloses, by (key, first item).

    ``first``/``last`` are in execution order (callers before callees); ``span`` exceeds every item index.
    """
    frames = np.flatnonzero(keys >= 0)
    frames = frames[np.argsort(keys[frames], kind="stable")]
    base = keys[frames].astype(np.int64) * span
    reach = np.maximum.accumulate(base + last[frames]) if len(frames) else base
    outer = np.ones(len(frames), dtype=bool)
    outer[1:] = base[1:] + first[frames[1:]] > reach[:-1]  # another key's reach is below this key's base
    return frames[outer]


class Intervals:
    """Disjoint stretches of items per key (the outermost frames of each key), asked about many items at once."""

    def __init__(self, keys, first, last, span):
        """``keys``, ``first``, ``last`` sorted by (key, first), as ``outermost`` gives them."""
        self.keys = keys.astype(np.int64)
        self.first = first.astype(np.int64)
        self.last = last.astype(np.int64)
        self._span = span
        self._starts = self.keys * span + self.first

    def has_key(self, keys):
        return np.isin(keys, self.keys)

    def _before(self, keys, items):
        """The stretch of the same key starting at or before each item (-1: none), and whether there is one."""
        k = np.searchsorted(self._starts, np.asarray(keys, np.int64) * self._span + items, side="right") - 1
        found = k >= 0
        found[found] = self.keys[k[found]] == keys[found]
        return k, found

    def inside(self, keys, items):
        """Is each item inside a stretch of its key?"""
        k, found = self._before(keys, items)
        found[found] = self.last[k[found]] >= items[found]
        return found

    def cover(self, keys, starts, ends):
        """``(inside, crossing)``: is each stretch ``starts..ends`` wholly inside a stretch of its key, or does
        a stretch of its key begin or end within it?"""
        if not len(self.keys):
            none = np.zeros(len(keys), dtype=bool)
            return none, none
        k, found = self._before(keys, starts)
        reach = np.where(found, self.last[np.maximum(k, 0)], -1)
        inside = found & (reach >= ends)
        following = np.minimum(k + 1, len(self.keys) - 1)
        next_begins = (k + 1 < len(self.keys)) & (self.keys[following] == keys) & (self.first[following] <= ends)
        crossing = (found & (reach >= starts) & ~inside) | next_begins
        return inside, crossing
