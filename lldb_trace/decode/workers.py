"""How many processes decode a large trace: every core this process may run on, unless the user says otherwise.

``LLDB_TRACE_WORKERS=N`` in the environment sets it for every decode (inside
LLDB as well); ``--workers N`` on the command line and ``workers=`` in the
API set it for one.  One worker decodes in this process alone.
"""

import os

from ..errors import LldbTraceError

ENVIRONMENT = "LLDB_TRACE_WORKERS"


class WorkerCountError(LldbTraceError):
    """A worker count that is not a whole number of at least one."""


def usable_cores():
    """The cores this process may run on (its CPU affinity, as taskset or a container limits it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def worker_count(given=None):
    """``given`` if set, else ``LLDB_TRACE_WORKERS``, else every usable core; raises WorkerCountError."""
    if given is not None:
        return checked_count(given, "the worker count")
    text = os.environ.get(ENVIRONMENT, "").strip()
    if text:
        return checked_count(text, f"{ENVIRONMENT}={text}")
    return usable_cores()


def checked_count(value, what):
    """``value`` (an int or its text) as a count of at least one, or a one-line error naming ``what``."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise WorkerCountError(f"{what} is not a number of worker processes: give a whole number, 1 or more")
    return count
