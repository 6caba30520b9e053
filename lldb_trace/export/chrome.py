"""Chrome's Trace Event JSON: one complete ("X") event per call, one track per thread, gaps as instant events.

Read by Perfetto's UI (ui.perfetto.dev), chrome://tracing and speedscope.
Timestamps are microseconds: nanoseconds are written as exact decimals
(``12.345``) so no fraction is lost; item indices are whole microseconds,
which doubles add exactly (a viewer that computes ts + dur in floating point
would otherwise see a call end after its tail-called successor starts).
Events are written one at a time as the calls are read: the file never
exists as one object in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

from .. import progress
from .stacks import CHUNK

if TYPE_CHECKING:
    from .stacks import Job, Names, ThreadCalls


def write(out: TextIO, threads: Iterable[ThreadCalls], job: Job) -> None:
    """Write ``threads`` (ThreadCalls, one after the other) to the text file ``out``."""
    out.write('{"traceEvents":[\n')
    separator = ""
    for calls in threads:
        for event in _thread_events(calls, job.names, micros if job.axis.timed else str):
            out.write(separator + event)
            separator = ",\n"
    axis = job.axis
    other = {
        "title": job.title,
        "description": job.description,
        "timeAxis": axis.describe("chrome"),
        "timeUnit": axis.unit,
    }
    out.write(f'\n],\n"displayTimeUnit":"ns",\n"otherData":{json.dumps(other)}}}\n')


def _thread_events(calls: ThreadCalls, names: Names, stamp: Callable[[int], str]) -> Iterator[str]:
    """A thread's metadata, calls and gaps as JSON texts; ``stamp`` writes an axis value as microseconds."""
    ids = f'"pid":{calls.pid},"tid":{calls.tid}'
    process = json.dumps(f"{calls.process_name} (pid {calls.pid})")
    yield f'{{"name":"process_name","ph":"M",{ids},"args":{{"name":{process}}}}}'
    yield f'{{"name":"thread_name","ph":"M",{ids},"args":{{"name":{json.dumps(calls.thread_name)}}}}}'
    yield f'{{"name":"thread_sort_index","ph":"M",{ids},"args":{{"sort_index":{calls.tid}}}}}'
    labels = [json.dumps(label) for label in names.labels]
    columns = (calls.start, calls.end, calls.name, calls.first, calls.instructions)
    with progress.task(f"Exporting {calls.thread_name} to Chrome JSON", len(calls)) as task:
        for offset in range(0, len(calls), CHUNK):
            task.at(offset)
            rows = zip(*(column[offset : offset + CHUNK].tolist() for column in columns), strict=True)
            for start, end, name, first, instructions in rows:
                yield (
                    f'{{"name":{labels[name]},"cat":"call","ph":"X","ts":{stamp(start)},"dur":{stamp(end - start)},'
                    f'{ids},"args":{{"first item":{first},"instructions":{instructions}}}}}'
                )
    for item, at, text in calls.gaps:
        yield (
            f'{{"name":"gap","cat":"gap","ph":"i","s":"t","ts":{stamp(at)},{ids},'
            f'"args":{{"item":{item},"error":{json.dumps(text)}}}}}'
        )


def micros(ns: int) -> str:
    """``ns`` nanoseconds as exact microseconds text: 12345 -> ``12.345``."""
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"
