"""speedscope's file format: one "evented" profile per thread, each call an open ("O") and a close ("C") event.

speedscope (https://www.speedscope.app, or ``npm install speedscope``) shows
it as a flame chart in time order, a left-heavy flame graph and a sandwich
table.  The events are written as the calls are walked; the frame table,
which speedscope needs whole, has one frame per function, so it is written
last (JSON does not care about key order).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from .. import __version__

if TYPE_CHECKING:
    from .stacks import Job, ThreadCalls

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def write(out: TextIO, threads: Iterable[ThreadCalls], job: Job) -> None:
    """Write ``threads`` (ThreadCalls, one after the other) to the text file ``out``."""
    unit = "nanoseconds" if job.axis.unit == "ns" else "none"
    out.write(f'{{"$schema":"{SCHEMA}",\n"profiles":[\n')
    for number, calls in enumerate(threads):
        title = json.dumps(f"{calls.thread_name} of {calls.process_name} (pid {calls.pid}), items {calls.item_range}")
        out.write(
            f'{"," if number else ""}{{"type":"evented","name":{title},"unit":"{unit}",'
            f'"startValue":{calls.range_start},"endValue":{calls.range_end},"events":[\n'
        )
        separator = ""
        for kind, _call, name, at in calls.walk(f"Exporting {calls.thread_name} to speedscope"):
            if kind != "G":  # speedscope has no instant events: a gap is where no call is open
                out.write(f'{separator}{{"type":"{kind}","frame":{name},"at":{at}}}')
                separator = ",\n"
        out.write("\n]}\n")
    frames = ",\n".join(_frame(label, place) for label, place in zip(job.names.labels, job.names.places, strict=True))
    exporter = json.dumps(f"lldb_trace {__version__}: {job.description}")
    out.write(f'],\n"shared":{{"frames":[\n{frames}\n]}},\n"name":{json.dumps(job.title)},"activeProfileIndex":0,')
    out.write(f'"exporter":{exporter}}}\n')


def _frame(label: str, place: tuple[str | None, int | None]) -> str:
    file, line = place
    frame: dict[str, str | int] = {"name": label}
    if file:
        frame["file"] = file
        if line:
            frame["line"] = line
    return json.dumps(frame)
