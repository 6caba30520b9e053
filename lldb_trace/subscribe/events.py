"""What a subscriber's callbacks receive, how they stop a walk, and what a walk returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis import ItemRange
    from ..decode.call_forest import Call
    from .walker import Walk

KINDS = ("call", "return", "gap", "instruction")


class StopWalk(Exception):  # noqa: N818 (a signal, not an error: raised to stop, like StopIteration)
    """Raise it in a callback to end the walk there (returning ``False`` does the same)."""


class Event:
    """One event of a walk, made per callback (they are many: kept small, names looked up on demand).

    ``kind``: "call", "return", "gap" or "instruction"; ``index``: the item (a call's first item, a
    return's last one, the gap, the instruction); ``time``: the time at that item in the trace's unit
    (a return's is the time after its last item, so return.time - call.time is the call's duration;
    None without timing); ``depth``: the call's depth, or the innermost call's at an instruction (None
    at a gap); ``address``: the function's entry for calls and returns, the instruction's address;
    ``row``: a call's or return's row in the thread's call forest (pairs a return with its call).
    """

    __slots__ = ("_walk", "address", "depth", "index", "kind", "row", "time")

    def __init__(
        self,
        kind: str,
        index: int,
        time: int | None,
        depth: int | None,
        address: int | None,
        row: int | None,
        walk: Walk,
    ) -> None:
        self.kind, self.index, self.time, self.depth = kind, index, time, depth
        self.address, self.row, self._walk = address, row, walk

    @property
    def function(self) -> str | None:
        """``module`function`` of the address, as LLDB prints it (None at a gap)."""
        return None if self.address is None else self._walk.label(self.address)

    @property
    def call(self) -> Call | None:
        """The decode.call_forest.Call of a call or return event (None for the others)."""
        return None if self.row is None else self._walk.forest.call(self.row)

    def __repr__(self) -> str:
        where = "" if self.address is None else f" 0x{self.address:x} {self.function}"
        depth = "" if self.depth is None else f" depth {self.depth}"
        time = "" if self.time is None else f" at {self.time}"
        return f"<Event {self.kind} {self.index}{depth}{time}{where}>"


@dataclass
class WalkSummary:
    """What a walk did: events delivered per kind, and whether a callback stopped it (at which item)."""

    range: ItemRange  # the stretch walked
    delivered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    stopped_at: int | None = None  # the item of the event whose callback stopped the walk

    @property
    def events(self) -> int:
        return sum(self.delivered.values())

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None

    def __str__(self) -> str:
        counts = ", ".join(f"{count:,} {kind}s" for kind, count in self.delivered.items() if count)
        end = f"; stopped at item {self.stopped_at}" if self.stopped else ""
        return f"walked items {self.range}: {counts or 'no events'} delivered{end}"
