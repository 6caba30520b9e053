"""One export file of many recordings' threads, as ``export.export`` writes it for the same threads.

The workers send each thread's call columns (ExportedThread); here they are
put on one axis, their function names numbered once across threads in the
order an export of all of them meets them, and handed to the format's own
writer, one thread after another in job order: the file is the one
``export(threads of every recording, ...)`` writes in a single process.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..export import FORMATS, ExportError, ExportResult, choose_axis, describe_export, parse_duration, perfetto
from ..export.output import staged
from ..export.stacks import Job, Names, ThreadCalls, from_frames
from .analyses import ExportedThread


def write_export(
    threads: Sequence[ExportedThread],
    format: str,
    target: Path,
    item_range: str | None,
    min_duration: str | None,
    weight: str | None,
) -> ExportResult:
    """Write ``threads`` to ``target`` (checked already: export.output.check_path) in ``format``."""
    with_items = [thread for thread in threads if thread.frames is not None]
    if not with_items:
        raise ExportError(f"thread {threads[0].tid} has no traced items to export")
    timed = [(thread.tid, thread.frames.times) for thread in with_items if thread.frames is not None]
    axis = choose_axis(timed, format, weight)
    minimum = parse_duration(min_duration, axis)
    if format == "perfetto":
        perfetto.protos()
    description = describe_export(item_range, axis, format, minimum)
    job = Job(Names(), axis, with_items[0].title, description, len(with_items) > 1)
    written = []

    def prepared() -> Iterator[ThreadCalls]:
        for thread in with_items:
            assert thread.frames is not None  # (with_items)
            ids = np.array([job.names.add(*named) for named in zip(thread.labels, thread.places, strict=True)])
            name_ids = ids[thread.name_ids] if len(ids) else np.zeros(0, np.int64)
            frames, pid, tid, name = thread.frames, thread.pid, thread.tid, thread.process_name
            calls = from_frames(frames, pid, tid, name, axis, minimum, name_ids, thread.gap_texts)
            written.append((tid, len(calls), calls.dropped))
            yield calls

    with staged(target, binary=format == "perfetto") as out:
        FORMATS[format].write(out, prepared(), job)
    skipped = [thread.tid for thread in threads if thread.frames is None]
    return ExportResult(target, format, axis, written, skipped)
