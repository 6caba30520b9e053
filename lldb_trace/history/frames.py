"""The frames of a thread at any point of its history, and walking a frame's own instructions.

At item ``i`` the innermost frame is the innermost call of the forest that
holds ``i``; each frame further out is the call that made it.  Frame 0's pc is
the instruction at ``i`` (not yet executed); an outer frame's pc is its call
instruction, the call site LLDB's and GDB's backtraces name (they show the
calling line, looking up the return address less one), and it resumes at the
return address.  The frame a signal handler interrupted stands, and resumes,
where the interrupted code resumes.  A frame's *own* items are its items minus
those of the calls it made: the stepping commands walk them, entering or
skipping the calls between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..decode.cursor import walk
from ..decode.decoded_thread import Gap
from ..decode.forest_builder import SWITCHED
from ..x86.instructions import Transfer

if TYPE_CHECKING:
    from ..decode.call_forest import CallForest
    from ..decode.decoded_thread import DecodedThread
    from ..decode.expand import BlockExpander

# Sizes of the calls a return address may follow, likeliest first: call rel32, call *%reg, call *disp(%rip)...
_CALL_SIZES = (5, 2, 6, 3, 7, 4)


@dataclass(frozen=True)
class Frame:
    """One frame at a point of history; ``row`` is its call-forest row (None: a frame the trace saw no item of).

    ``pc`` is where it stands (an outer frame: at its call instruction) and ``resumes_at`` where it goes on
    (by default ``pc``, as for frame 0; an outer frame: the call's return address); both None where a gap lost
    the call.
    """

    pc: int | None
    row: int | None
    outermost_traced: bool = False  # the last frame, when its caller is unknown (the trace began inside it,
    # or it runs on a stack a context switch went to)
    asynchronous: bool = False  # a signal handler: the next frame stands where the interrupted code resumes
    resumes_at: int | None = None

    def __post_init__(self) -> None:
        if self.resumes_at is None:
            object.__setattr__(self, "resumes_at", self.pc)


class FrameMap:
    """Items, addresses and frames of one decoded thread (its storage and call forest)."""

    def __init__(self, decoded: DecodedThread, expander: BlockExpander, forest: CallForest) -> None:
        self.decoded, self.expander, self.forest = decoded, expander, forest
        self._children: dict[int, tuple[list[int], list[int], list[int]]] = {}

    # -- items -------------------------------------------------------------------------------------

    def item(self, index: int) -> int | Gap:
        """The address at item ``index``, or the Gap there."""
        for _, value in walk(self.decoded, index, True, self.expander):
            return value
        raise IndexError(index)

    def address(self, index: int) -> int | None:
        value = self.item(index)
        return None if isinstance(value, Gap) else value

    def is_gap(self, index: int) -> bool:
        return isinstance(self.item(index), Gap)

    def instruction_size(self, address: int) -> int:
        return self.expander.classifier[address].size

    def branch_at(self, index: int) -> int:
        """The InsnClass of item ``index`` when it is the call, return or jump that ends its block, else 0."""
        decoded = self.decoded
        k, start = decoded.part_of(index)
        part = decoded.parts[k]
        ordinal, first = part.block_at(index - start)
        row = part.block_sequence[ordinal]
        size = part.block_sizes[row]
        return part.row_classes[row] if size and index - start == first + size - 1 else 0

    # -- frames ------------------------------------------------------------------------------------

    def frame_row(self, index: int) -> int:
        """The forest row of the innermost frame at item ``index`` (-1 in a gap)."""
        return self.forest.innermost(index)

    def frames(self, index: int, pc: int | None) -> list[Frame]:
        """The frames at item ``index`` whose frame 0 stands at ``pc``, innermost first."""
        return self.frames_from(self.frame_row(index), pc)

    def frames_from(self, row: int, pc: int | None, resumes_at: int | None = None) -> list[Frame]:
        """The frames from forest row ``row`` outwards, frame 0 standing at ``pc`` and going on at ``resumes_at``
        (default ``pc``; a caller whose callee is about to start stands at the call and resumes after it)."""
        frames = []
        while row >= 0:
            parent = int(self.forest.parent[row])
            if self.forest.flags[row] & SWITCHED:
                parent = -1  # the frames below it are another stack's
            asynchronous = self.forest.call_item(row) is None and parent >= 0
            frames.append(Frame(pc, row, parent < 0, asynchronous, resumes_at))
            if parent < 0:
                break
            pc, resumes_at = self.call_site(row)
            row = parent
        return frames

    def call_site(self, row: int) -> tuple[int | None, int | None]:
        """``(pc, resumes_at)`` of the frame below ``row`` while ``row`` runs: its call instruction and the return
        address; for a signal handler, where the interrupted code resumes (twice); ``(None, None)`` when a gap
        lost the call."""
        forest = self.forest
        call_item = forest.call_item(row)
        if call_item is None:  # a signal handler: the interrupted code resumes where it stopped
            resume = forest.extra(row)
            return resume, resume
        if call_item < 0:  # called before the trace began: its untraced caller is named by where it returned
            returned_to = int(forest.entry[int(forest.parent[row])])
            if not returned_to:  # the trace ends at that return: where it went is not in it
                return None, None
            return self.call_before(returned_to), returned_to
        call = self.address(call_item)
        if not isinstance(call, int):  # the call was lost in a gap: where the caller resumes is unknown
            return None, None
        return call, call + self.instruction_size(call)

    def call_before(self, return_address: int) -> int:
        """The call that ``return_address`` follows, decoded backwards (the trace does not hold it): the
        instruction ending there that transfers control (a jump never leaves a return address after it);
        ``return_address`` itself if none does."""
        classify = self.expander.classifier
        for size in _CALL_SIZES:
            insn = classify[return_address - size]
            if insn.size == size and insn.transfer in (Transfer.DIRECT, Transfer.INDIRECT):
                return insn.address
        return return_address

    def children(self, row: int) -> tuple[list[int], list[int], list[int]]:
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

    def child_at(self, row: int, index: int) -> int | None:
        """The call ``row`` made that holds item ``index`` (its row), or None if ``index`` is ``row``'s own.

        Found from the innermost call at ``index`` outwards: listing ``row``'s calls would cost as much as
        it has (a loop in main makes millions)."""
        parent = self.forest.parent
        inner = self.forest.innermost(index)
        while inner >= 0 and parent[inner] != row:
            inner = int(parent[inner])
        return inner if inner >= 0 else None

    def depth(self, row: int) -> int:
        return int(self.forest.depth[row]) if row >= 0 else -1

    def is_root(self, row: int) -> bool:
        return row < 0 or int(self.forest.parent[row]) < 0
