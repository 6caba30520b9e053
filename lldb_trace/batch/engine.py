"""Running jobs on a Dask cluster: submitted with retries, collected as they finish, failures named.

A worker that dies (killed, out of memory, a crash in native code) costs its
job a run on another worker: Dask reschedules it, and a job that raised
something other than a user's error is run again up to RETRIES times.  A job
that still fails stops the command with one line naming its recording,
unless the command keeps going, in which case the answer says which
recordings it lacks.  Results are put back in the order of the jobs, not of
their finishing, so an answer never depends on the cluster.  Ctrl-C cancels
the jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..errors import LldbTraceError
from .jobs import Outcome

RETRIES = 2


class JobFailedError(LldbTraceError):
    """A job failed on every try, and the command does not keep going."""


@dataclass(frozen=True)
class Failure:
    """A job that gave no answer: what it was for (its recording, and thread) and why."""

    what: str
    error: str


class Progress:
    """``DONE/TOTAL jobs`` on one line of ``stream`` rewritten as jobs finish, when it is a terminal."""

    def __init__(self, stream: TextIO, title: str = "") -> None:
        self.stream, self.title = stream, title
        self.shown = stream.isatty()

    def show(self, done: int, total: int) -> None:
        if self.shown:
            self.stream.write(f"\r{self.title}: {done}/{total} jobs done")
            self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def run_jobs(
    client: Any,
    function: Callable[..., Outcome],
    jobs: Sequence[tuple],
    labels: Sequence[str],
    progress: Progress,
    keep_going: bool,
) -> tuple[list[Any], list[Failure]]:
    """``function(*job)`` for each of ``jobs`` on ``client``'s cluster: ``(values in job order, failures)``.

    A failed job's value is None; without ``keep_going`` the first failure cancels the rest and raises
    JobFailedError naming ``labels[k]``.
    """
    from distributed import as_completed

    futures = [client.submit(function, *job, retries=RETRIES, pure=False) for job in jobs]
    order = {future.key: k for k, future in enumerate(futures)}
    values: list[Any] = [None] * len(jobs)
    failures: dict[int, Failure] = {}
    try:
        progress.show(0, len(jobs))
        for done, future in enumerate(as_completed(futures), start=1):
            k = order[future.key]
            outcome = _outcome(future)
            if outcome.error is not None:
                failures[k] = Failure(labels[k], outcome.error)
                if not keep_going:
                    raise JobFailedError(f"{labels[k]}: {outcome.error}")
            values[k] = outcome.value
            progress.show(done, len(jobs))
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        progress.clear()
    return values, [failures[k] for k in sorted(failures)]


def _outcome(future: Any) -> Outcome:
    """The job's Outcome, or the error that ended its last try as one."""
    from distributed import KilledWorker

    if future.status == "finished":
        return future.result()
    if future.status == "cancelled":  # by the scheduler: it lost the job, or was shut down
        return Outcome(error="the cluster cancelled it")
    error = future.exception()
    if isinstance(error, KilledWorker):
        return Outcome(error="every worker that ran it died (killed, out of memory, or a crash in native code)")
    text = str(error).strip().splitlines()
    return Outcome(error=f"{type(error).__name__}: {text[0]}" if text else type(error).__name__)
