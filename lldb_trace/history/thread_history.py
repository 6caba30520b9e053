"""A thread's place in its history: a position, and what the thread looked like there.

Positions are item indices as ``trace dump --instructions`` numbers them: 0
is the first traced instruction, not yet executed; the thread's pc at
position ``i`` is item ``i``'s address.  Position ``end`` (the item count) is
where the thread stopped: the present, whose pc is the thread's stop pc
(for a trace ending at a breakpoint, the breakpoint's address; for a crash,
the faulting instruction).  These are GDB's ``record goto`` numbers.  A gap
(a decode error) is no place to stand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from numbers import Integral

import numpy as np

from ..libipt import InsnClass
from ..symbolize import ElfSymbolizer
from ..traced_thread import TracedThread
from . import gaps, search, stepping
from .frames import Frame, FrameMap
from .movement import NO_MORE_HISTORY, HistoryError, Movement
from .search import Match


def describe_position(position: int, end: int) -> str:
    """How a position reads: "instruction 1234 of 18858", or the end of history."""
    if position == end:
        return f"end of history (where the thread stopped, after instruction {end - 1})"
    return f"instruction {position} of {end}"


class ThreadHistory:
    """One traced thread's history and its current position (the end, at first).

    The thread's symbolizer answers lines (``locate``) and prologue ends; ``stop_pc`` is where
    the thread stands at the end (default: where its trace ends).
    """

    def __init__(self, thread: TracedThread, stop_pc: int | None = None) -> None:
        self.thread, self.tid, self.symbolizer = thread, thread.tid, thread.symbolizer
        decoded = thread.decoded
        if decoded is None:
            raise HistoryError(f"thread {self.tid} has no trace of its own: it has no history to move in")
        self.decoded = decoded
        self.stop_pc = stop_pc or thread.stop_pc
        self.map = FrameMap(decoded, thread.expander, thread.call_forest())
        self.end = self.decoded.item_count
        self.position = self.end
        self._row_starts: dict[int, int | None] = {}
        self._hits: tuple[frozenset[int] | None, np.ndarray] = (None, np.zeros(0, np.int64))  # addresses, executions
        self.reverse_finished = False  # the last movement was a reverse-finish to a call (stepping.py)

    @property
    def item_count(self) -> int:
        return self.end

    @property
    def at_end(self) -> bool:
        return self.position == self.end

    @property
    def pc(self) -> int | None:
        return self.pc_at(self.position)

    def pc_at(self, position: int) -> int | None:
        return self.stop_pc if position == self.end else self.map.address(position)

    def describe(self, position: int | None = None) -> str:
        return describe_position(self.position if position is None else position, self.end)

    def check(self, position: int) -> int:
        """``position`` if the thread can stand there; else a HistoryError saying why."""
        if not isinstance(position, int) or not 0 <= position <= self.end:
            raise HistoryError(f"position {position} is out of range: thread {self.tid} has positions 0 to {self.end}")
        if position < self.end:
            gap = self.map.item(position)
            if not isinstance(gap, int):
                raise HistoryError(
                    f"item {position} is a gap in the trace ({gap.text}), not an instruction: go to {position - 1}"
                    f" or {position + 1}"
                )
        return position

    def resolve(self, position: int) -> int:
        """``position`` as an index the thread can stand at (check): a negative one counts back from the end, -1
        being the last item, as ``pt goto -1`` reads it."""
        if isinstance(position, bool) or not isinstance(position, Integral):
            raise HistoryError(f"a position is an item index (an int), not {position!r}")
        position = int(position)  # a numpy integer too
        if position < 0:
            if self.end + position < 0:
                raise HistoryError(
                    f"position {position} is before the beginning: thread {self.tid} has {self.end} items"
                    f" (-{self.end} is the first)"
                )
            position += self.end
        return self.check(position)

    def goto(self, position: int) -> Movement:
        self.position = self.check(position)
        self.reverse_finished = False
        return Movement(self.position)

    def move(self, movement: Movement) -> Movement:
        """Take a Movement's position (the stepping functions compute it) and return it."""
        self.position = movement.position
        self.reverse_finished = False
        return movement

    # -- frames --------------------------------------------------------------------------------------

    def frames(self) -> list[Frame]:
        return self.frames_at(self.position)

    def frames_at(self, position: int) -> list[Frame]:
        """The frames at ``position``, innermost first (see frames.Frame)."""
        if position < self.end:
            return self.map.frames(position, self.map.address(position))
        return self.end_frames()

    def end_frames(self) -> list[Frame]:
        """The frames where the thread stopped: those of the last item, unless it was a call or a return
        (after a gap: frame 0 alone, at the stop pc)."""
        if not self.end or gaps.ends_in_gap(self):
            return [Frame(self.stop_pc, None, True)]
        last = self.end - 1
        row = self.map.frame_row(last)
        branch = self.last_branch()
        if branch == InsnClass.CALL:  # the thread stopped at the callee's first instruction, before it ran
            address = self.map.address(last)
            assert address is not None  # (a trace ending in a gap has frame 0 alone)
            outer = self.map.frames_from(row, address, address + self.map.instruction_size(address))
            return [Frame(self.stop_pc, None), *outer]
        if branch == InsnClass.RETURN and row >= 0 and not self.map.is_root(row):
            return self.map.frames_from(int(self.map.forest.parent[row]), self.stop_pc)
        return self.map.frames(last, self.stop_pc)

    def end_row(self) -> int | None:
        """The forest row of the frame the thread stopped in (None: a callee it stopped at the door of)."""
        frames = self.end_frames()
        return frames[0].row

    def last_branch(self) -> int:
        """The InsnClass of the last traced instruction when it was a call, return or jump, else 0."""
        return self.map.branch_at(self.end - 1) if self.end else 0

    # -- lines ---------------------------------------------------------------------------------------

    def line_at(self, position: int) -> tuple[str, int] | None:
        """``(file, line)`` of the instruction at ``position``, or None without line information."""
        pc = self.pc_at(position)
        return self.line_of(pc) if pc is not None else None

    def line_of(self, address: int) -> tuple[str, int] | None:
        location = self.symbolizer.locate(address)
        return (location.file, location.line) if location.file and location.line else None

    def row_start(self, address: int) -> int | None:
        """Where the line-table row holding ``address`` begins, as GDB keeps rows (None: no line information)."""
        found = self._row_starts.get(address, False)
        if found is False:
            found = self._row_starts[address] = self._rows.row_start(address)
        return found

    @cached_property
    def _rows(self) -> ElfSymbolizer:
        """The modules' own line tables: LLDB's line entries do not say which rows GDB's stepping stops at."""
        if isinstance(self.symbolizer, ElfSymbolizer):
            return self.symbolizer
        return ElfSymbolizer(self.thread.process_trace.process.modules, self.thread.module_bytes)

    # -- movements (stepping.py, search.py) -----------------------------------------------------------
    # ``breakpoints`` (load addresses) stop a movement at the first one it reaches, as in GDB.

    def stepi(self, reverse: bool = False, breakpoints: Iterable[int] = ()) -> Movement:
        return self._take(stepping.stepi, reverse, breakpoints)

    def nexti(self, reverse: bool = False, breakpoints: Iterable[int] = ()) -> Movement:
        return self._take(stepping.nexti, reverse, breakpoints)

    def step(self, reverse: bool = False, breakpoints: Iterable[int] = ()) -> Movement:
        return self._take(stepping.step, reverse, breakpoints)

    def next(self, reverse: bool = False, breakpoints: Iterable[int] = ()) -> Movement:
        return self._take(stepping.next_line, reverse, breakpoints)

    def finish(self, reverse: bool = False, breakpoints: Iterable[int] = ()) -> Movement:
        movement = self._take(stepping.finish, reverse, breakpoints)
        self.reverse_finished = reverse and movement.message is None and movement.breakpoint is None
        return movement

    def continue_(self, breakpoints: Iterable[int], reverse: bool = False, also: np.ndarray | None = None) -> Movement:
        """To the nearest execution of one of ``breakpoints`` (load addresses) in that direction, or of the
        positions ``also`` (sorted: where watchpoints stop)."""
        found = self.hits(breakpoints)
        if also is not None and len(also):
            found = np.union1d(found, also)
        movement = search.continue_to(self, found, reverse)
        return self.move(gaps.settle(self, movement, self.position))  # the beginning may be a gap

    def find(self, addresses: Iterable[int] = (), entries: Iterable[int] = (), limit: int | None = None) -> list[Match]:
        """Executions, newest first: of ``addresses`` (instructions, line starts), or calls of ``entries``."""
        if entries:
            return search.find_calls(self, entries, limit)
        return search.find_addresses(self, addresses, limit)

    def hits(self, addresses: Iterable[int]) -> np.ndarray:
        """Sorted item indices of every execution of ``addresses`` (kept for the next movement)."""
        wanted = frozenset(addresses)
        if self._hits[0] != wanted:
            self._hits = (wanted, search.hits(self.decoded, self.thread.expander, wanted))
        return self._hits[1]

    def _take(
        self, stepping_function: Callable[[ThreadHistory, bool], Movement], reverse: bool, breakpoints: Iterable[int]
    ) -> Movement:
        """Move as ``stepping_function`` says, stopping at the first breakpoint on the way and never on a gap;
        reaching the end of history in the direction moved says so, as GDB does."""
        start = self.position
        if start == self.end and gaps.ends_in_gap(self):  # what ran last, and in which frame, is unknown
            movement = gaps.cross(self, start, reverse) if reverse else Movement(start, NO_MORE_HISTORY)
        else:
            movement = gaps.settle(self, stepping_function(self, reverse), start)
        target = movement.position
        if breakpoints and target != start:
            hit = search.first_hit(self.hits(breakpoints), start, target)
            if hit is not None:
                movement = Movement(hit, None, self.map.address(hit))
        quiet = movement.message is None and movement.breakpoint is None
        if quiet and movement.position != start and movement.position == (0 if reverse else self.end):
            movement = Movement(movement.position, NO_MORE_HISTORY)
        return self.move(movement)
