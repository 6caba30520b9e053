"""The registers a software recorder saw before its threads' instructions, the newest of them kept per thread.

Both software recorders stop a thread before the instructions they record:
``lldb-trace record`` before every one, ``pt start --backend software`` where
LLDB hands the thread back (each single step, the end of each run).  What they
read there is a known state (values/register_states.py); a thread keeps those of
its last MOST_POSITIONS instructions, as many as the value recovery covers.
"""

from collections import deque

import numpy as np

from ...values.machine_state import TRACKED
from ...values.process_values import MOST_POSITIONS
from ...values.register_states import register_states_bytes


class StateRing:
    """``keep(tid, index, block)``: ``block`` (``width`` uint64 values, as bytes) is thread ``tid``'s state before
    its ``index``-th instruction; ``columns``: where each TRACKED register is in a block."""

    def __init__(self, width, columns, capacity=MOST_POSITIONS):
        self.width, self.columns, self.capacity = width, list(columns), capacity
        self._states = {}  # tid -> (deque of instruction indices, deque of blocks)

    def keep(self, tid, index, block):
        """A later state at the same index replaces the earlier one (a signal's handler runs before it)."""
        indices, blocks = self._states.get(tid) or self._states.setdefault(
            tid, (deque(maxlen=self.capacity), deque(maxlen=self.capacity))
        )
        if indices and indices[-1] == index:
            indices.pop()
            blocks.pop()
        indices.append(index)
        blocks.append(block)

    def arrays(self, tid, first=0):
        """``(instruction counts from ``first`` on, less first; rows of TRACKED values)``, or None without any."""
        indices, blocks = self._states.get(tid, ((), ()))
        # Zipped, not indexed: a deque's [k] walks to k from an end, quadratic over a full ring.
        kept = [(index, block) for index, block in zip(indices, blocks, strict=True) if index >= first]
        if not kept:
            return None
        every = np.frombuffer(b"".join(block for _, block in kept), dtype=np.uint64)
        rows = every.reshape(len(kept), self.width)[:, self.columns]
        return np.array([index - first for index, _ in kept], dtype=np.uint64), rows

    def files(self, tids, firsts):
        """``{tid: .npz bytes}`` of the threads among ``tids`` with states (values/register_states.py);
        ``firsts[tid]``: the first index its trace keeps (a ring-buffer recording's), counted as 0."""
        found = {}
        for tid in tids:
            states = self.arrays(tid, firsts.get(tid, 0))
            if states is not None:
                found[tid] = register_states_bytes(*states, names=TRACKED)
        return found
