"""Exports of a trace's calls for other tools: timelines (Chrome JSON, Perfetto) and flame graphs (folded, speedscope).

``export(threads, format, path, ...)`` writes one file; ``pt export`` is
its command.  Every format shows the same calls (analysis.frames_of) on the
same axis: nanoseconds when the threads have timestamps, else item indices
(said in each file's metadata).  Writers stream: a file is written as the
calls are read, into a temporary file renamed onto PATH once complete.
No LLDB here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Protocol, runtime_checkable

from .. import __version__
from ..analysis import ThreadTimes, parse_range
from ..errors import LldbTraceError
from ..traced_thread import TracedThread
from . import chrome, folded, perfetto, speedscope
from .output import check_path, staged
from .stacks import Axis, Job, Names, ThreadCalls, thread_calls


@dataclass(frozen=True)
class Format:
    """An export format: what writes it, what it is (``pt export``'s help) and what opens it (its summary)."""

    write: Callable
    about: str
    viewer: str


FORMATS = {
    "chrome": Format(
        chrome.write,
        "Chrome Trace Event JSON: a timeline for ui.perfetto.dev or chrome://tracing",
        "open it in https://ui.perfetto.dev or chrome://tracing",
    ),
    "perfetto": Format(
        perfetto.write, "a Perfetto protobuf trace for ui.perfetto.dev", "open it in https://ui.perfetto.dev"
    ),
    "folded": Format(
        folded.write,
        "folded stacks for flamegraph.pl, inferno or speedscope",
        "draw it with flamegraph.pl or inferno-flamegraph, or open it in speedscope",
    ),
    "speedscope": Format(
        speedscope.write,
        "speedscope's JSON: a flame chart per thread",
        "open it in https://www.speedscope.app or with 'speedscope FILE' (npm install -g speedscope)",
    ),
}
WEIGHTS = {  # the axis of an export, with what it means (pt export's help)
    "instructions": "item indices as the axis; instructions as folded stacks' weights",
    "time": "nanoseconds (TSC ticks without a conversion): needs a trace with timestamps",
}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-zµ]*)")
_NS_PER = {"": 1, "ns": 1, "us": 1000, "µs": 1000, "ms": 10**6, "s": 10**9}


@runtime_checkable
class HasThreads(Protocol):
    """Several traced threads at once, as an api.Trace holds them."""

    @property
    def threads(self) -> Sequence[TracedThread]: ...


class ExportError(LldbTraceError):
    """An export that cannot be made as asked: format, weight, --min-duration, or threads without items."""


@dataclass
class ExportResult:
    """What was written: per thread ``(tid, calls written, calls left out)``, and the threads skipped."""

    path: Path
    format: str
    axis: Axis
    threads: list[tuple[int, int, int]]
    skipped: list[int]  # tids with no items

    @property
    def calls(self) -> int:
        return sum(written for _tid, written, _dropped in self.threads)

    def summary(self) -> str:
        """One line for the command's output."""
        what = f"thread{'s' if len(self.threads) > 1 else ''} {_listed(tid for tid, _w, _d in self.threads)}"
        dropped = sum(d for _tid, _written, d in self.threads)
        notes = [self.axis.describe_weights() if self.format == "folded" else self.axis.describe(self.format)]
        if dropped:
            notes.append(f"{dropped} shorter calls left out")
        if self.skipped:
            notes.append(f"nothing traced in thread{'s' if len(self.skipped) > 1 else ''} {_listed(self.skipped)}")
        return f"Wrote {self.calls} calls of {what} to {self.path} ({'; '.join(notes)}): {FORMATS[self.format].viewer}"


def export(
    threads: TracedThread | Iterable[TracedThread] | HasThreads,
    format: str,
    path: str | Path,
    item_range: str | None = None,
    min_duration: str | int | None = None,
    weight: str | None = None,
    force: bool = False,
) -> ExportResult:
    """Write the calls of ``threads`` (TracedThreads such as api.ThreadTrace, one, or an api.Trace for all) to ``path``.

    ``format``: chrome, perfetto, folded or speedscope.  ``item_range``: FROM:TO
    (item indices, as ``parse_range`` reads them) applied to each thread.
    ``weight``: "time" (nanoseconds, or TSC ticks without a conversion) or
    "instructions" (item indices as the axis, instructions as folded weights);
    default: time for the timelines when every thread has timestamps, else
    instructions.  ``min_duration``: calls shorter than this on the axis are
    left out (a number, or text such as ``10us`` on a time axis); in folded
    stacks their weight stays with their caller.  Returns an ExportResult.
    """
    if format not in FORMATS:
        raise ExportError(f"unknown format '{format}': choose {', '.join(FORMATS)}")
    if weight is not None and weight not in WEIGHTS:
        raise ExportError(f"unknown weight '{weight}': choose {' or '.join(WEIGHTS)}")
    threads = _unique(_listed_threads(threads))
    if not threads:
        raise ExportError("no threads to export")
    target = check_path(path, force)
    with_items = [thread for thread in threads if thread.item_count > 0]
    if not with_items:
        raise ExportError(f"thread {threads[0].tid} has no traced items to export")
    for thread in with_items:
        parse_range(item_range, thread.item_count)  # a bad range fails before any file is made
    axis = choose_axis([(thread.tid, ThreadTimes.of(thread)) for thread in with_items], format, weight)
    minimum = parse_duration(min_duration, axis)
    if format == "perfetto":
        perfetto.protos()
    description = describe_export(item_range, axis, format, minimum)
    job = Job(Names(), axis, _title(with_items[0]), description, len(with_items) > 1)
    written = []

    def prepared() -> Iterator[ThreadCalls]:
        for thread in with_items:
            calls = thread_calls(thread, item_range, axis, minimum, job.names)
            written.append((thread.tid, len(calls), calls.dropped))
            yield calls

    with staged(target, binary=format == "perfetto") as out:
        FORMATS[format].write(out, prepared(), job)
    skipped = [thread.tid for thread in threads if thread.item_count == 0]
    return ExportResult(target, format, axis, written, skipped)


def _listed_threads(threads: TracedThread | Iterable[TracedThread] | HasThreads) -> list[TracedThread]:
    if isinstance(threads, HasThreads):  # an api.Trace
        return list(threads.threads)
    return [threads] if isinstance(threads, TracedThread) else list(threads)


def parse_duration(value: str | int | None, axis: Axis) -> int:
    """``--min-duration`` on ``axis``: a whole count of instructions (or ticks), or a time like 10us, 2ms, 500."""
    if value is None or value == "":
        return 0
    text = str(value).strip()
    found = _DURATION.fullmatch(text)
    if found is None:
        raise ExportError(f"--min-duration '{text}': give a length, e.g. 100 (instructions) or 10us (timed traces)")
    number, suffix = found.group(1), found.group(2).lower()
    if axis.unit == "ns":
        if suffix not in _NS_PER:
            raise ExportError(f"--min-duration '{text}': unknown unit '{suffix}': use ns, us, ms or s")
        return int(Decimal(number) * _NS_PER[suffix])
    what = "TSC ticks (the bundle has no conversion to ns)" if axis.unit == "ticks" else "instructions"
    if suffix or not number.isdigit():
        raise ExportError(f"--min-duration '{text}': this export's axis is {what}: give a whole number of them")
    return int(number)


def choose_axis(timed: Sequence[tuple[int, ThreadTimes]], format: str, weight: str | None) -> Axis:
    """The export's Axis for threads ``(tid, their times)``: time when asked (or by default for timelines when
    every thread is timed), else instructions."""
    if weight is None:
        weight = "time" if format != "folded" and all(times.known for _tid, times in timed) else "instructions"
    if weight == "instructions":
        return Axis("instructions", "items")
    for tid, times in timed:
        if not times.known:
            raise ExportError(
                f"thread {tid} has no timestamps: export with --weight instructions (record with --tsc for them)"
            )
    return Axis("time", timed[0][1].unit, min(times.origin() for _tid, times in timed))


def describe_export(item_range: str | None, axis: Axis, format: str, minimum: int) -> str:
    """The description an export file carries: the version, the items, the axis and the calls left out."""
    description = f"lldb_trace {__version__} export, items {item_range or 'all'}, {axis.describe(format)}"
    if minimum:
        unit = {"ns": "ns", "ticks": "ticks", "items": "instructions"}[axis.unit]
        description += f", calls shorter than {minimum} {unit} left out"
    return description


def _unique(threads: Iterable[TracedThread]) -> list[TracedThread]:
    """The threads in order, each once."""
    seen, kept = set(), []
    for thread in threads:
        key = (thread.pid, thread.tid)
        if key not in seen:
            seen.add(key)
            kept.append(thread)
    return kept


def _listed(tids: Iterable[int]) -> str:
    return ", ".join(map(str, tids))


def _title(thread: TracedThread) -> str:
    bundle_path = getattr(thread.bundle, "path", None)
    return f"{bundle_path}" if bundle_path else f"process {thread.pid}"
