"""What the batch commands print: the merged profile and calls, the matches per thread, as text or JSON.

A merged profile is shown by ``pt profile``'s own table (views/profile.py)
under a header saying what was merged; its JSON is ``pt profile --json``'s
with the recordings and threads instead of one thread.  Matches are
``pt find``'s listing, one per thread, under the recording's name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..profile import Profile, ProfileRow
from ..views.matches import matches_text
from ..views.profile import profile_json, profile_text
from .analyses import Found
from .engine import Failure
from .merge import CallTotals


@dataclass(frozen=True)
class ThreadName:
    """A thread of a recording, as answers name it."""

    recording: str
    pid: int
    tid: int

    def fields(self) -> dict:
        return {"recording": self.recording, "pid": self.pid, "tid": self.tid}


def _count(number: int, what: str) -> str:
    return f"{number} {what}" + ("" if number == 1 else "s")


def _scope(threads: Sequence[ThreadName]) -> str:
    return f"{_count(len(threads), 'thread')} in {_count(len({t.recording for t in threads}), 'recording')}"


def profile_report(
    merged: Profile, rows: Sequence[ProfileRow], threads: Sequence[ThreadName], item_range: str | None
) -> str:
    """``pt profile``'s table of ``rows`` under a header naming the threads merged."""
    timing = f"times in {merged.time_unit}" if merged.time_unit else "no time columns (not every thread has timing)"
    header = (
        f"Profile of {_scope(threads)} by {merged.by}: items {item_range or 'all'} of each thread"
        f" ({merged.instructions} instructions), {timing}"
    )
    return header + "\n" + profile_text(merged, rows).split("\n", 1)[1]


def profile_document(
    merged: Profile,
    rows: Sequence[ProfileRow],
    sort: str,
    threads: Sequence[ThreadName],
    item_range: str | None,
    missing: Sequence[Failure],
) -> str:
    """``pt profile --json``'s object, with ``threads`` (and ``missing``: what --keep-going left out) for its
    one thread, and ``range`` the FROM:TO applied to each thread (null: all)."""
    document = json.loads(profile_json(merged, rows, sort))
    del document["thread"]
    document["range"] = item_range
    return json.dumps({**document, **_sources(threads, missing)}, indent=1)


def calls_report(totals: CallTotals, count: int, threads: Sequence[ThreadName]) -> str:
    """The functions with the most calls (``count``; 0: all), then every module's calls."""
    functions = totals.by_count(totals.functions)
    shown = functions[:count] if count else functions
    width = max(len("calls"), len(str(totals.calls)))
    lines = [
        f"Calls in {_scope(threads)}: {totals.calls} calls of {_count(len(functions), 'function')}"
        f" in {_count(len(totals.modules), 'module')}",
        f"{'calls':>{width}}  function",
        *(f"{calls:>{width}}  {name}" for name, calls in shown),
    ]
    if len(shown) < len(functions):
        lines.append(f"... {_count(len(functions) - len(shown), 'more function')}: '-c 0' shows all")
    lines.append(f"{'calls':>{width}}  module")
    lines.extend(f"{calls:>{width}}  {name}" for name, calls in totals.by_count(totals.modules))
    return "\n".join(lines)


def calls_document(totals: CallTotals, count: int, threads: Sequence[ThreadName], missing: Sequence[Failure]) -> str:
    functions = totals.by_count(totals.functions)
    document = {
        "calls": totals.calls,
        "functionCount": len(functions),
        "functions": [{"function": name, "calls": calls} for name, calls in functions[: count or None]],
        "modules": [{"module": name, "calls": calls} for name, calls in totals.by_count(totals.modules)],
        **_sources(threads, missing),
    }
    return json.dumps(document, indent=1)


def found_report(found: Sequence[tuple[ThreadName, Found]], what: str) -> str:
    """``pt find``'s listing for each thread searched, under its recording, process and thread; then, per
    reason, the threads not searched (their recording has no such function or line)."""
    sections: list[str] = []
    unsearched: dict[str, list[str]] = {}  # note -> the threads it kept from being searched
    for thread, result in found:
        if result.note is not None:
            unsearched.setdefault(result.note, []).append(f"{thread.recording} (thread {thread.tid})")
            continue
        listing = matches_text(result.matches, f"{what} in the trace of thread tid {thread.tid}", result.more)
        sections.append(f"{thread.recording}, process {thread.pid}, thread {thread.tid}:\n{listing}")
    sections.extend(f"Not searched, {note}: {', '.join(threads)}" for note, threads in unsearched.items())
    return "\n\n".join(sections)


def found_document(found: Sequence[tuple[ThreadName, Found]], missing: Sequence[Failure]) -> str:
    threads = [
        {**thread.fields(), "matches": result.matches, "more": result.more, "note": result.note}
        for thread, result in found
    ]
    return json.dumps({"threads": threads, "missing": _missing(missing)}, indent=1)


def _sources(threads: Sequence[ThreadName], missing: Sequence[Failure]) -> dict:
    return {
        "recordings": list(dict.fromkeys(thread.recording for thread in threads)),
        "threads": [thread.fields() for thread in threads],
        "missing": _missing(missing),
    }


def _missing(missing: Sequence[Failure]) -> list[dict]:
    return [{"what": failure.what, "error": failure.error} for failure in missing]
