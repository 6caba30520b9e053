"""The blocks of one decoded part that can change frames, as numpy columns.

Blocks end at every call, return and indirect jump, so the storage already
says where each of them is: numpy picks those blocks (and the gaps, and the
blocks that hold a direct jump into another function) out of millions.  Both
ways of building the forest read them from here: the reference visit, one
branch at a time, and the runs built in bulk (regular_runs.py), which read
the columns for all of them at once.
"""

import numpy as np

from ..libipt import InsnClass
from . import compiled_runs

CALL, RETURN, JUMP = int(InsnClass.CALL), int(InsnClass.RETURN), int(InsnClass.JUMP)


class PartBranches:
    """Ordinals ``low``..``high`` of one part's block sequence as columns (``sequence``: their rows, ``sizes``,
    ``ends``...), and ``ordinals``: the ones to visit, numbered from ``low``.

    Item indices are absolute (``base``: the item ordinal ``low`` begins at); a gap counts as one item.
    The columns hold one ordinal more than the slice when the part goes on, so that its last branch
    knows where it went.  ``tail_rows`` are the rows (distinct blocks) holding a tail jump before
    their last instruction.  A part is taken a slice at a time so the columns stay bounded however
    long the part is; the columns are built in ``scratch`` (a compiled_runs.Scratch) where given,
    and last until the next slice built there.
    """

    def __init__(self, part, base, next_ip, tail_rows, low=0, high=None, scratch=None):
        self.part, self.base, self.next_ip, self.tail_rows = part, base, next_ip, tail_rows
        whole = part.block_sequence
        sequence = np.frombuffer(whole, dtype=np.uint16 if whole.typecode == "H" else np.uint32)
        high = len(sequence) if high is None else high
        sequence = sequence[low : high + 1]
        self.sequence, self.count, self.ips = sequence, len(sequence), part.block_ips
        found, slice_size = compiled_runs.library(), high - low
        ordinal_type = np.int32 if self.count < 2**31 else np.int64
        if found is None:
            columns = _columns(part, sequence, base, tail_rows, slice_size, ordinal_type)
        else:
            scratch = scratch or compiled_runs.Scratch()
            arguments = (part, sequence, base, tail_rows, slice_size, ordinal_type, scratch)
            columns = compiled_runs.branch_columns(found, *arguments)
        self.sizes, self.gaps, self.ends, self.classes, self.ordinals = columns
        self.next_base = int(self.ends[slice_size - 1]) + 1  # where the next slice begins

    def following(self, ordinal):
        """Is ordinal ``ordinal`` followed by a block (not a gap, not the part's end)?"""
        return ordinal + 1 < self.count and not self.gaps[ordinal + 1]


def _columns(part, sequence, base, tail_rows, slice_size, ordinal_type):
    """What compiled_runs.branch_columns gives, in numpy passes."""
    sizes = np.frombuffer(part.block_sizes, dtype=np.uint16)[sequence]
    gaps = sizes == 0
    sizes[gaps] = 1
    ends = np.cumsum(sizes, dtype=np.int64) + (base - 1)  # each ordinal's last item
    classes = np.frombuffer(part.row_classes, dtype=np.uint8)[sequence]
    wanted = (classes != 0) | gaps
    if tail_rows:
        wanted |= np.isin(sequence, np.fromiter(tail_rows, dtype=sequence.dtype))
    wanted[slice_size:] = False  # the ordinal after the slice is the next slice's
    return sizes, gaps, ends, classes, np.flatnonzero(wanted).astype(ordinal_type)
