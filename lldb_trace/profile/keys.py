"""What a profile's rows are: functions, source lines or modules, numbered, for addresses and for frames.

Addresses are located once each (a trace runs the same code over and over);
rows are numbered in the order they are first met, and numpy columns of
those numbers are what the counting works on.
"""

import os

import numpy as np

from ..decode.forest_builder import ASYNCHRONOUS, SWITCHED, TAIL_CALL, UNTRACED_START

FUNCTION, LINE, MODULE = "function", "line", "module"
UNKNOWN = "(unknown)"


class KeyTable:
    """Rows by key: each has a shown name, its fields for JSON, and what ``--sort name`` orders it by."""

    def __init__(self):
        self._ids = {}
        self.names, self.fields, self.orders = [], [], []

    def __len__(self):
        return len(self.names)

    def intern(self, key, name, fields, order):
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.names)
            self.names.append(name)
            self.fields.append(fields)
            self.orders.append(order)
        return found

    def of_addresses(self, addresses, symbolizer, by):
        """The row of each address (a numpy array), located once per distinct address."""
        distinct, inverse = np.unique(addresses, return_inverse=True)
        key_of = _MAKERS[by]
        rows = [self.intern(*key_of(int(address), symbolizer.locate(int(address)))) for address in distinct.tolist()]
        return np.array(rows, dtype=np.int64)[inverse] if rows else np.zeros(0, np.int64)


def _function(address, location):
    if not address:
        return UNKNOWN, UNKNOWN, {"module": None, "function": None}, (UNKNOWN,)
    module, function = location.module, location.function
    name = location.function_label if function else f"{module or '(no module)'}`0x{address:x}"  # one row per entry
    return (module, function or address), name, {"module": module, "function": function}, (name,)


def _line(address, location):
    label = location.function_label
    if location.file and location.line:
        fields = {"file": location.file, "line": location.line, "function": label}
        order = (0, os.path.basename(location.file), location.line, label)
        return (location.file, location.line), location.source, fields, order
    fields = {"file": None, "line": None, "function": label}  # no line information: one row per function
    return ("function", label), label, fields, (1, label, 0, label)


def _module(address, location):
    name = location.module or "(no module)"
    return name, name, {"module": location.module}, (name,)


_MAKERS = {FUNCTION: _function, LINE: _line, MODULE: _module}


def frame_entry_keys(keys, frames, symbolizer, by):
    """The row of each frame's function (``by`` "function") or of its function's module ("module")."""
    entries = frames.entry.astype(np.uint64)
    distinct, inverse = np.unique(entries, return_inverse=True)
    key_of = _MAKERS[by]
    rows = [
        keys.intern(*key_of(address, symbolizer.locate(address) if address else None))
        if address or by == FUNCTION
        else -1
        for address in distinct.tolist()
    ]
    return np.array(rows, dtype=np.int64)[inverse] if rows else np.zeros(0, np.int64)


def call_items(forest, frames):
    """The item of the call instruction that made each frame; -1 where there is none or it was not traced.

    Vectorised CallForest.call_item: first item - 1, except for the few rows whose
    call is elsewhere (tail calls, switched contexts) or absent (tree roots, signal
    handlers, the first callee of a frame the trace began in), asked row by row.
    """
    rows = frames.row
    first = forest.first[rows].astype(np.int64)
    parent = forest.parent[rows].astype(np.int64)
    flags = forest.flags[rows]
    above = np.maximum(parent, 0)
    special = (parent < 0) | (flags & (ASYNCHRONOUS | TAIL_CALL | SWITCHED) != 0)
    special |= (forest.flags[above] & UNTRACED_START != 0) & (forest.first[above] == first)
    items = first - 1
    for k in np.flatnonzero(special).tolist():
        item = forest.call_item(int(rows[k]))
        items[k] = -1 if item is None else item
    return items


def counted_calls(forest, frames, items, by):
    """Which frames count as calls of the range: entered in it (the first item in it) by a call instruction in
    it, a tail call or a signal.  By line only the call instructions count: a tail call is the callee's call
    continuing, made from the same line.  A frame running when the range or the trace begins is no call."""
    flags = forest.flags[frames.row]
    low = frames.range.first
    entered = frames.starts_inside & (flags & UNTRACED_START == 0)
    if by == LINE:
        return entered & (items >= low) & (flags & TAIL_CALL == 0)
    return entered & ((items >= low) | (flags & ASYNCHRONOUS != 0))
