"""The frames of a thread at any point of its history, and walking a frame's own instructions.

At item ``i`` the innermost frame is the innermost call of the forest that
holds ``i``; each frame further out is the call that made it.  Frame 0's pc is
the instruction at ``i`` (not yet executed); an outer frame's pc is the
return address of the call it made, as LLDB's own unwinder reports outer
frames (for a signal handler's frame, the next frame's pc is where the
interrupted code resumes).  A frame's *own* items are its items minus those
of the calls it made: the stepping commands walk them, entering or skipping
the calls between.
"""

from dataclasses import dataclass

import numpy as np

from ..decode.cursor import walk
from ..decode.decoded_thread import Gap
from ..decode.forest_builder import SWITCHED


@dataclass(frozen=True)
class Frame:
    """One frame at a point of history; ``row`` is its call-forest row (None: a frame the trace saw no item of)."""

    pc: int
    row: int | None
    outermost_traced: bool = False  # the last frame, when its caller is unknown (the trace began inside it,
    # or it runs on a stack a context switch went to)
    asynchronous: bool = False  # a signal handler: the next frame's pc is where the interrupted code resumes


class FrameMap:
    """Items, addresses and frames of one decoded thread (its storage and call forest)."""

    def __init__(self, decoded, expander, forest):
        self.decoded, self.expander, self.forest = decoded, expander, forest
        self._children = {}

    # -- items -------------------------------------------------------------------------------------

    def item(self, index):
        """The address at item ``index``, or the Gap there."""
        for _, value in walk(self.decoded, index, True, self.expander):
            return value
        raise IndexError(index)

    def address(self, index):
        value = self.item(index)
        return None if isinstance(value, Gap) else value

    def is_gap(self, index):
        return isinstance(self.item(index), Gap)

    def instruction_size(self, address):
        return self.expander.classifier[address].size

    def branch_at(self, index):
        """The InsnClass of item ``index`` when it is the call, return or jump that ends its block, else 0."""
        decoded = self.decoded
        k, start = decoded.part_of(index)
        part = decoded.parts[k]
        position, first = part.locate(index - start)
        row = part.entries[position]
        size = part.block_sizes[row]
        return part.row_classes[row] if size and index - start == first + size - 1 else 0

    # -- frames ------------------------------------------------------------------------------------

    def frame_row(self, index):
        """The forest row of the innermost frame at item ``index`` (-1 in a gap)."""
        return self.forest.innermost(index)

    def frames(self, index, pc):
        """The frames at item ``index`` whose frame 0 stands at ``pc``, innermost first."""
        return self.frames_from(self.frame_row(index), pc)

    def frames_from(self, row, pc):
        """The frames from forest row ``row`` outwards, frame 0 standing at ``pc``."""
        frames = []
        while row >= 0:
            parent = int(self.forest.parent[row])
            if self.forest.flags[row] & SWITCHED:
                parent = -1  # the frames below it are another stack's
            asynchronous = self.forest.call_item(row) is None and parent >= 0
            frames.append(Frame(pc, row, parent < 0, asynchronous))
            if parent < 0:
                break
            pc = self.caller_pc(row)
            row = parent
        return frames

    def caller_pc(self, row):
        """The pc of the frame below ``row`` while ``row`` runs: the return address of its call."""
        forest = self.forest
        call_item = forest.call_item(row)
        if call_item is None:  # a signal handler: the interrupted code resumes where it stopped
            return forest.extra(row)
        if call_item < 0:  # called before the trace began: its untraced caller is named by where it returned
            return int(forest.entry[int(forest.parent[row])])
        call = self.address(call_item)
        if not isinstance(call, int):  # the call was lost in a gap: where the caller resumes is unknown
            return None
        return call + self.instruction_size(call)

    def children(self, row):
        """``(firsts, lasts)`` of the calls ``row`` made, as sorted lists."""
        found = self._children.get(row)
        if found is None:
            rows = self.forest.children(row)
            forest = self.forest
            found = self._children[row] = (
                forest.first[rows].tolist() if rows else [],
                forest.last[rows].tolist() if rows else [],
                rows,
            )
        return found

    def child_at(self, row, index):
        """The call ``row`` made that holds item ``index`` (its row), or None if ``index`` is ``row``'s own.

        Found from the innermost call at ``index`` outwards: listing ``row``'s calls would cost as much as
        it has (a loop in main makes millions)."""
        parent = self.forest.parent
        inner = self.forest.innermost(index)
        while inner >= 0 and parent[inner] != row:
            inner = int(parent[inner])
        return inner if inner >= 0 else None

    def depth(self, row):
        return int(self.forest.depth[row]) if row >= 0 else -1

    def is_root(self, row):
        return row < 0 or int(self.forest.parent[row]) < 0


def function_rows(forest, entries):
    """Rows of the calls that entered one of ``entries`` (function entry addresses)."""
    wanted = np.array(sorted(entries), dtype=np.uint64)
    return np.flatnonzero(np.isin(forest.entry, wanted)).tolist()
