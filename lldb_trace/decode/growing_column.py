"""A numpy column that grows by doubling: the call forest's columns while they are built.

An array.array grows by a sixteenth each time it is extended, so a column of
hundreds of millions of calls, extended run by run, is copied again and again:
on a trace of 7.7 billion instructions that was a third of the forest's build.
Doubling copies each value about once; the column is cut to its length when
the build hands it over.
"""

import numpy as np

_TYPES = {"q": np.int64, "i": np.int32, "Q": np.uint64, "B": np.uint8}


class GrowingColumn:
    """``append``, ``extend`` (numpy values), ``len``, ``[k]`` and ``[k] = value`` over numpy storage."""

    def __init__(self, typecode, capacity=1024):
        self.typecode = typecode
        self.dtype = _TYPES[typecode]
        self._values = np.zeros(capacity, dtype=self.dtype)
        self._length = 0

    def __len__(self):
        return self._length

    def __getitem__(self, k):
        if k < 0:
            k += self._length
        if not 0 <= k < self._length:
            raise IndexError(f"column index {k} is out of range ({self._length} values)")
        return int(self._values[k])

    def __setitem__(self, k, value):
        if k < 0:
            k += self._length
        if not 0 <= k < self._length:
            raise IndexError(f"column index {k} is out of range ({self._length} values)")
        self._values[k] = value

    def append(self, value):
        if self._length == len(self._values):
            self._grow(self._length + 1)
        self._values[self._length] = value
        self._length += 1

    def extend(self, values):
        """Append numpy ``values`` (or a count of zeros, given an int), converted to the column's type."""
        count = values if isinstance(values, int) else len(values)
        end = self._length + count
        if end > len(self._values):
            self._grow(end)
        if isinstance(values, int):
            self._values[self._length : end] = 0
        else:
            self._values[self._length : end] = values
        self._length = end

    def taken(self):
        """The values as a numpy array of the column's length (its storage, cut in place); the column is spent."""
        values, self._values = self._values, None
        values.resize(self._length, refcheck=False)
        return values

    def _grow(self, needed):
        capacity = max(needed, 2 * len(self._values))
        grown = np.empty(capacity, dtype=self.dtype)
        grown[: self._length] = self._values[: self._length]
        self._values = grown
