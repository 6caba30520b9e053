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

    def arrays(self, tid):
        """``(instruction counts, rows of TRACKED values)``, or None without any."""
        indices, blocks = self._states.get(tid, ((), ()))
        if not indices:
            return None
        every = np.frombuffer(b"".join(blocks), dtype=np.uint64)  # joined, not indexed: a deque's [k] walks
        rows = every.reshape(len(indices), self.width)[:, self.columns]
        return np.fromiter(indices, dtype=np.uint64, count=len(indices)), rows

    def files(self, tids, traced):
        """``{tid: .npz bytes}`` of the threads among ``tids`` with states (values/register_states.py), each state
        named by where the thread's trace holds its instruction (``traced[tid]``: GroundTruth.traced), those it
        does not hold left out: before a ring buffer's start, in a gap."""
        found = {}
        for tid in tids:
            states = self.arrays(tid)
            if states is not None:
                where = traced[tid](states[0])
                kept = where >= 0
                if kept.any():
                    instructions = where[kept].astype(np.uint64)
                    found[tid] = register_states_bytes(tid, instructions, states[1][kept], names=TRACKED)
        return found
