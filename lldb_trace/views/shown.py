"""What a dump shows: the values a view's walk produces and its writers print (LLDB's TraceDumper has
TraceItem for this).

Each holds everything a writer needs, already looked up: the item or
call, its Location, its timestamp in the unit the dump shows.  Writers only
format; they never read the trace or ask a symbolizer.
"""

from dataclasses import dataclass
from typing import overload

from ..bundle.model import TscConversion
from ..decode.call_forest import Call
from ..decode.cursor import Item
from ..decode.decoded_thread import EventRecord
from ..symbolize import Location


@overload
def shown_time(tsc: int, conversion: TscConversion | None) -> int: ...
@overload
def shown_time(tsc: None, conversion: TscConversion | None) -> None: ...
def shown_time(tsc: int | None, conversion: TscConversion | None) -> int | None:
    """A timestamp as dumps show it: wall-clock ns with the bundle's ``conversion``, else the TSC; None without."""
    if tsc is None:
        return None
    return conversion.to_ns(tsc) if conversion else tsc


@dataclass(frozen=True)
class ShownInstruction:
    """One item of ``--instructions``: an instruction or a gap, with the events just before it."""

    item: Item
    time: int | None  # shown_time of the item's timestamp
    location: Location | None  # None for a gap, or with --raw
    kind: str | None  # the control-flow kind, with --kind


@dataclass(frozen=True)
class ShownEvent:
    """One event of ``--only-events``; ``event.index`` is the item it came before."""

    event: EventRecord
    time: int | None  # shown_time of that item's timestamp, with --time


@dataclass(frozen=True)
class ShownCall:
    """One call of ``--function-calls``."""

    call: Call
    location: Location | None  # of the function that ran (None: nothing says which it was)
    stub: Location | None  # of the PLT stub it was called through
    timing: tuple[int, int] | tuple[()] | None  # (inclusive, exclusive) time; () when no time update falls inside
    entry: int | None = None  # the function's entry: the call's, or where the thread stands when none ran yet

    @property
    def label(self) -> str:
        """``module`function`` of the function that ran (``(no instruction)`` when nothing says which); one the
        trace ends at the entry of is marked, and an IFUNC's resolver too: its run is ld.so choosing the function,
        not a call of it."""
        label = self.location.function_label if self.location is not None else "(no instruction)"
        if self.location is not None and self.location.resolver:
            label += " (IFUNC resolver)"
        if self.location is not None and self.call.address is None:
            label += " (the trace ends at its entry)"
        return label + (" (untraced start)" if self.call.untraced_start else "")

    @property
    def stub_note(self) -> str | None:
        """``via module`symbol stub for: name, bound lazily`` where that says more than the label, else None.

        The stub is named when LLDB names it and either its name differs from the
        function's (an IFUNC's variant, an alias) or ld.so bound it on this call.
        """
        if self.stub is None:
            return None
        named = self.stub.stub and self.stub.function is not None
        notes = []
        function = self.location.function if self.location is not None else None
        if named and (self.call.lazy_binding or self.stub.function != function):
            notes.append(f"via {self.stub.function_label}")
        if self.call.lazy_binding:
            notes.append("bound lazily")
        return ", ".join(notes) or None


@dataclass(frozen=True)
class ThreadDump:
    """One thread's part of a dump: what it shows in display order, and where the next dump continues."""

    pid: int
    tid: int
    has_trace: bool
    wall_clock: bool  # times are ns (the bundle converts TSC to wall-clock time), else TSC ticks
    shown: list  # ShownInstructions, ShownEvents or ShownCalls, as the dump's mode says
    next_start: int | None  # where Enter continues; None: the window reached the end
