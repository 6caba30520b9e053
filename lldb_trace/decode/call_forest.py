"""The call forest of a decoded thread: who called whom, over which items, as columns.

One row per call (a frame): its first and last item, parent, depth, the
entry of the function that ran, and flags; about 33 bytes a call (int32
item indices below 2^31 items), not a Python object each.  Rows are in
execution order: by first item, callers before their callees.  Views and the
API get Call objects, made on demand for the rows they show.  How the rows
are found (calls, returns, gaps, non-local exits, tail calls, PLT stubs,
signal handlers) is forest_builder.py's business.
"""

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from .. import progress
from . import forest_builder, forest_join
from .forest_builder import ASYNCHRONOUS, LAZY_BINDING, LEFT_NON_LOCALLY, TAIL_CALL, UNTRACED_START


class CallForest:
    """The trees of a thread's calls, one per stretch between gaps."""

    def __init__(self, decoded, expander, functions, plt=None, shortest_run=forest_builder.SHORTEST_RUN, task=None):
        task = task or progress.QUIET
        pieces = forest_join.PieceJoins(decoded, task) if any(p.piece_forest for p in decoded.parts) else None
        built = forest_builder.build(decoded, expander, functions, plt if plt else None, shortest_run, task, pieces)
        depth = _column(built, "level", np.int32)  # the built column, made the depths in place
        ends = [*built.tree_starts[1:], len(depth)] if built.tree_starts else []  # no tree: no call at all
        for start, end, lowest in zip(built.tree_starts, ends, built.tree_levels, strict=True):
            if lowest:  # a tree with untraced callers: its lowest level becomes depth 0
                depth[start:end] -= lowest
        first = _column(built, "first", np.int32)
        order = None if _in_order(first, depth) else np.lexsort((depth, first))  # built in order, but for a few
        index_type = np.int32 if decoded.item_count < 2**31 else np.int64
        self.first = _sorted(first, order, index_type)
        del first
        self.last = _sorted(_column(built, "last", np.int32), order, index_type)
        self.depth = _sorted(depth, order, np.int32)
        del depth
        self.entry = _sorted(_column(built, "entry", np.uint64), order, np.uint64)
        self.flags = _sorted(_column(built, "flags", np.uint8), order, np.uint8)
        rank = None
        if order is not None:
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
        self.extra_rows, self.extra_values = _sparse(built.extra, rank)
        self.entered_rows, self.entered_values = _sparse(built.entered, rank)
        parent = _column(built, "parent", np.int32)
        if order is None:
            self.parent, self._call_items = parent, dict(built.call_items)
        else:
            parent = parent[order]
            self.parent = np.where(parent >= 0, rank[np.maximum(parent, 0)], -1).astype(np.int32)
            self._call_items = {int(rank[node]): item for node, item in built.call_items.items()}
        self._calls = _Calls(self)

    def __len__(self):
        return len(self.first)

    @property
    def storage_bytes(self):
        columns = (self.first, self.last, self.parent, self.depth, self.entry, self.flags)
        sparse = sum(column.nbytes for column in (self.extra_rows, self.extra_values, self.entered_rows))
        sparse += self.entered_values.nbytes
        return sum(column.nbytes for column in columns) + sparse + 100 * len(self._call_items)

    def extra(self, row):
        """The stub a call went through (a PLT call), or where a signal handler's interrupted code resumes;
        0 for the many calls without either (kept sparse: a column of them would cost 8 bytes a call)."""
        k = int(np.searchsorted(self.extra_rows, row))
        return int(self.extra_values[k]) if k < len(self.extra_rows) and self.extra_rows[k] == row else 0

    def entered(self, rows):
        """Per row of ``rows`` (a numpy array), the item where the function that ran began: the call's first
        item, but for a call through a PLT stub the item after the stub's jump (and ld.so's binding)."""
        rows = np.asarray(rows, dtype=np.int64)
        items = self.first[rows].astype(np.int64)
        k = np.minimum(np.searchsorted(self.entered_rows, rows), max(len(self.entered_rows) - 1, 0))
        through_stub = (self.entered_rows[k] == rows) if len(self.entered_rows) else np.zeros(len(rows), dtype=bool)
        items[through_stub] = self.entered_values[k[through_stub]].astype(np.int64)
        return items

    def calls(self):
        """Every call in execution order (by first item, callers before callees), as a sequence of Calls."""
        return self._calls

    def call(self, row):
        return Call(self, row)

    @property
    def trees(self):
        return [Call(self, row) for row in np.flatnonzero(self.parent < 0).tolist()]

    def call_item(self, row):
        """The item of the call instruction that made call ``row`` (None for a tree's first frame or a handler)."""
        parent = self.parent[row]
        if self.flags[row] & ASYNCHRONOUS or parent < 0:
            return None
        if self.flags[parent] & UNTRACED_START and self.first[row] == self.first[parent]:
            return -1  # called before the trace (or before a gap) began
        return self._call_items.get(row, int(self.first[row]) - 1)

    def innermost(self, index):
        """The row of the innermost call holding item ``index``, or -1 (a gap, or past the end)."""
        row = int(np.searchsorted(self.first, index, side="right")) - 1
        while row >= 0 and self.last[row] < index:
            row = int(self.parent[row])
        return row

    def open_at(self, index):
        """The rows of the calls open at item ``index``, innermost first."""
        rows, row = [], self.innermost(index)
        while row >= 0:
            rows.append(row)
            row = int(self.parent[row])
        return rows

    def children(self, row):
        """The rows of the calls ``row`` made, in order."""
        end = _next_after(self, row)
        return (np.flatnonzero(self.parent[row + 1 : end] == row) + row + 1).tolist()


def _column(built, name, dtype):
    """A column of the built ForestArrays as numpy values (a view, which may become the forest's own column);
    ``built`` lets go of it, so that a column that is copied is freed as soon as the copy is made."""
    values = getattr(built, name)
    setattr(built, name, None)
    return np.frombuffer(values, dtype=values.typecode) if len(values) else np.zeros(0, dtype=dtype)


def _sparse(extra, rank):
    """``(rows, values)`` of the built ``{node: value}``, by row (``rank``: node -> row, None when the same)."""
    nodes = np.fromiter(extra, dtype=np.int64, count=len(extra))
    values = np.fromiter(extra.values(), dtype=np.uint64, count=len(extra))
    rows = nodes if rank is None else rank[nodes]
    by_row = np.argsort(rows, kind="stable")
    return rows[by_row].astype(np.int64), values[by_row]


def _in_order(first, depth):
    """Are the rows already in execution order (by first item, callers before callees)?"""
    ties = np.flatnonzero(first[1:] <= first[:-1])  # few: rows sharing a first item, or out of order
    return bool(np.all((first[ties + 1] == first[ties]) & (depth[ties + 1] >= depth[ties])))


def _sorted(values, order, dtype):
    """``values`` in ``order`` (None: as they are, not copied if already of ``dtype``) as an array of ``dtype``."""
    return (values if order is None else values[order]).astype(dtype, copy=False)


def _next_after(forest, row):
    """The first row after ``row``'s subtree."""
    return int(np.searchsorted(forest.first, forest.last[row], side="right")) if forest.last[row] >= 0 else row + 1


class _Calls(Sequence):
    """The forest's calls as a read-only sequence of Call views (bisect works on it, with a key)."""

    def __init__(self, forest):
        self._forest = forest

    def __len__(self):
        return len(self._forest.first)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [Call(self._forest, row) for row in range(*key.indices(len(self)))]
        row = key + len(self) if key < 0 else key
        if not 0 <= row < len(self):
            raise IndexError(row)
        return Call(self._forest, row)


class Call:
    """One function invocation (a row of the forest): items ``first``..``last``, its callees included.

    ``address`` is the entry of the function that ran (for an untraced caller: the instruction the
    trace returned to), ``stub`` the PLT stub the call went through (None for a direct call), and
    ``entered`` the item of that function's first instruction: ``first`` but for a call through a
    stub, whose items (and ld.so's binding, on a lazy first call) come before it.
    """

    __slots__ = ("_forest", "row")

    def __init__(self, forest, row):
        self._forest, self.row = forest, row

    first = property(lambda self: int(self._forest.first[self.row]))
    entered = property(lambda self: int(self._forest.entered([self.row])[0]))  # where the function that ran began
    last = property(lambda self: int(self._forest.last[self.row]))
    depth = property(lambda self: int(self._forest.depth[self.row]))
    untraced_start = property(lambda self: bool(self._forest.flags[self.row] & UNTRACED_START))
    lazy_binding = property(lambda self: bool(self._forest.flags[self.row] & LAZY_BINDING))
    tail_call = property(lambda self: bool(self._forest.flags[self.row] & TAIL_CALL))
    asynchronous = property(lambda self: bool(self._forest.flags[self.row] & ASYNCHRONOUS))
    left_non_locally = property(lambda self: bool(self._forest.flags[self.row] & LEFT_NON_LOCALLY))

    @property
    def address(self):
        entry = int(self._forest.entry[self.row])
        return entry or None

    @property
    def stub(self):
        if self._forest.flags[self.row] & ASYNCHRONOUS:
            return None
        return self._forest.extra(self.row) or None

    @property
    def call_item(self):
        return self._forest.call_item(self.row)

    @property
    def parent(self):
        row = int(self._forest.parent[self.row])
        return Call(self._forest, row) if row >= 0 else None

    @property
    def children(self):
        return [Call(self._forest, row) for row in self._forest.children(self.row)]

    def walk(self):
        """This call and every call below it, callers before callees, in order of their first index."""
        end = _next_after(self._forest, self.row)
        return (Call(self._forest, row) for row in range(self.row, max(end, self.row + 1)))

    def __eq__(self, other):
        return isinstance(other, Call) and other._forest is self._forest and other.row == self.row

    def __hash__(self):
        return hash((id(self._forest), self.row))

    def __repr__(self):
        where = f" at 0x{self.address:x}" if self.address is not None else ""
        stub = self.stub
        via = f" via stub 0x{stub:x}" + (" (bound lazily)" if self.lazy_binding else "") if stub else ""
        kinds = [
            name
            for name, flag in (
                ("untraced start", self.untraced_start),
                ("tail call", self.tail_call),
                ("asynchronous", self.asynchronous),
                ("left non-locally", self.left_non_locally),
            )
            if flag
        ]
        kind = "".join(f" ({k})" for k in kinds)
        callees = len(self._forest.children(self.row))
        plural = "" if callees == 1 else "s"
        return f"<Call [{self.first}..{self.last}] depth {self.depth}{where}{via}{kind}, {callees} callee{plural}>"


def list_index(calls, call):
    """Where ``call`` is in a list of calls from the same forest, or -1 (by row, bisecting on first items)."""
    k = bisect_right(calls, call.first, key=lambda c: c.first) - 1
    while k >= 0 and calls[k].first == call.first:
        if calls[k].row == call.row:
            return k
        k -= 1
    return -1
