"""The analysis each batch command runs on one thread, and the plain data it sends back.

Each is the single-process analysis itself (profile.profile, history.queries.find,
analysis.frames_of as export uses it), so a thread's part of a batch answer is
what ``pt profile``, ``pt find`` or ``pt export`` computes for that thread.
Calls are the profile by function's calls column: a call instruction, a tail
call or a signal entering the function, counted where the function begins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import Frames, frames_of, parse_range
from ..export.stacks import Names, process_name
from ..history.queries import FindError, find
from ..profile import Profile, profile
from ..profile.keys import FUNCTION, UNKNOWN
from ..views.matches import shown_matches

if TYPE_CHECKING:
    from ..api import ThreadTrace

NO_MODULE = "(no module)"  # what a profile by module calls the code of no module


@dataclass(frozen=True)
class ProfileOf:
    """The thread's Profile by ``by`` over ``item_range`` (FROM:TO, None: all)."""

    by: str
    item_range: str | None

    def __call__(self, thread: ThreadTrace) -> Profile:
        return profile(thread, self.by, self.item_range)


@dataclass(frozen=True)
class CallCount:
    """Calls of one function: its label, its module as a profile by module names it (None: the calls of
    an unknown function, which no module's row counts), and how many."""

    function: str
    module: str | None
    calls: int


@dataclass(frozen=True)
class CallsOf:
    """The thread's CallCounts over ``item_range``, functions with at least one call."""

    item_range: str | None

    def __call__(self, thread: ThreadTrace) -> list[CallCount]:
        rows = profile(thread, FUNCTION, self.item_range).rows
        return [
            CallCount(row.name, None if row.name == UNKNOWN else row.fields["module"] or NO_MODULE, row.calls)
            for row in rows
            if row.calls
        ]


@dataclass(frozen=True)
class Found:
    """What ``pt find`` lists for a thread (views.matches.shown_matches), whether -c cut it short, or why
    nothing was searched (the recording has no such function or line: a note, not a failure)."""

    matches: list[dict]
    more: bool
    note: str | None = None


@dataclass(frozen=True)
class FindIn:
    """Calls of ``function``, executions of ``line`` or of ``address`` (one of them), the newest ``count``
    (0: all)."""

    function: str | None
    line: tuple[str, int] | None
    address: int | None
    count: int

    def __call__(self, thread: ThreadTrace) -> Found:
        limit = self.count + 1 if self.count else None
        try:
            matches = find(thread.history, thread.symbolizer, self.function, self.line, self.address, limit)
        except FindError as error:
            return Found([], False, error.reason)  # (a hint names LLDB's commands)
        more = bool(self.count) and len(matches) > self.count
        shown = matches[: self.count] if self.count else matches
        return Found(shown_matches(shown, thread.symbolizer), more)


@dataclass(frozen=True)
class ExportedThread:
    """A thread's calls as ``pt export`` takes them (analysis.Frames; None without items), with each call's
    function as a local name id into ``labels``/``places`` (an export.stacks.Names of this thread)."""

    pid: int
    tid: int
    title: str  # what an export of this thread names as exported (its bundle)
    process_name: str
    item_count: int
    frames: Frames | None
    name_ids: np.ndarray
    labels: list[str]
    places: list[tuple[str | None, int | None]]
    gap_texts: dict[int, str]


@dataclass(frozen=True)
class ExportOf:
    """The thread's calls over ``item_range`` for an export."""

    item_range: str | None

    def __call__(self, thread: ThreadTrace) -> ExportedThread:
        title = str(thread.bundle.path) if thread.bundle.path else f"process {thread.pid}"
        name = process_name(thread.process_trace.process)
        count = thread.item_count
        if not count:
            return ExportedThread(thread.pid, thread.tid, title, name, 0, None, np.zeros(0, np.int64), [], [], {})
        frames = frames_of(thread, parse_range(self.item_range, count))
        names = Names()
        name_ids = names.ids(thread.symbolizer, frames.entry)
        in_range = set(frames.gap_items.tolist())
        gap_texts = {gap.index: gap.text for gap in thread.decoded_or_error().gaps if gap.index in in_range}
        return ExportedThread(
            thread.pid, thread.tid, title, name, count, frames, name_ids, names.labels, names.places, gap_texts
        )
