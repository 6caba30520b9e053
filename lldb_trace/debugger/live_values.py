"""The known states of a process traced live with ``pt start``: where its recording started, and the process
itself where its trace ends.

``pt start`` writes the process's state as a core (the start state: the
recovery runs forward from it, and ``trace save`` keeps it as
``startCoreFile``) before tracing begins, so that a failure to write it
starts nothing.  The core is a temporary file unlinked at once and held open
while LLDB runs, named through /proc/self/fd: nothing is left behind however
LLDB ends (it never runs Python's atexit handlers).  The live process,
stopped where its trace ends, is the end state, read when the history view
asks for a value.  A circular buffer (``--buffer``) keeps only the trace's
end, which does not start where the start state was taken: no start state
then.
"""

import tempfile
from dataclasses import replace
from pathlib import Path

from ..capture.process_view import read_maps
from ..errors import LldbTraceError
from ..values.core_writer import dump_core
from ..values.process_values import values_of
from .core_snapshot import live_snapshot, live_state

_held = {}  # path -> the start state's file, open (and so readable) as long as LLDB runs


def save_start_state(process):
    """The path of a core of ``process`` as it stands now, to be the start state of the trace about to begin."""
    try:
        held = tempfile.TemporaryFile(prefix="lldb-trace-start-", suffix=".core")  # noqa: SIM115 (held open)
    except OSError as error:
        raise LldbTraceError(
            f"cannot make a temporary file in {tempfile.gettempdir()} for the start state: {error.strerror}; "
            "set TMPDIR to a writable folder"
        ) from None
    try:
        dump_core(live_snapshot(process), held)
        held.flush()
    except OSError as error:
        held.close()
        raise LldbTraceError(
            f"cannot write the start state's core in {tempfile.gettempdir()}: {error.strerror}; free space there "
            "or set TMPDIR to another folder ('pt start --buffer-size' keeps no start state)"
        ) from None
    path = Path(f"/proc/self/fd/{held.fileno()}")
    _held[path] = held
    return path


def release_start_state(path):
    """Close the start state at ``path`` that no trace will use (tracing could not start): its file goes."""
    held = _held.pop(path, None)
    if held is not None:
        held.close()


def keep_known_states(session, start_core):
    """Give ``session``'s trace the live process as its end state and ``start_core`` (a path, or None) as its
    start state."""
    process = session.target.GetProcess()
    values = values_of(session.trace)
    values.live_end = lambda tid: live_state(process, tid)
    values.live_shared = lambda: _mappings(process.GetProcessID())
    if hasattr(session.backend, "state_arrays"):  # the software recorder reads the registers at each stop
        values.live_states = session.backend.state_arrays
    if start_core is not None:
        session.trace.process = replace(session.trace.process, start_core_file=start_core)


def _mappings(pid):
    """The live process's mappings, [(start, end, path, perms)] (none once it is gone: no end state then)."""
    try:
        return [(mapping.start, mapping.end, mapping.path, mapping.perms) for mapping in read_maps(pid)]
    except OSError:
        return []
