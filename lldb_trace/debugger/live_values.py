"""The known states of a process traced live with ``pt start``: where its recording started, and the process
itself where its trace ends.

``pt start`` writes the process's state as a core into a temporary folder
(the start state: the recovery runs forward from it, and ``trace save`` keeps
it as ``startCoreFile``); the live process, stopped where its trace ends, is
the end state, read when the history view asks for a value.  A circular
buffer (``--buffer``) keeps only the trace's end, which does not start where
the start state was taken: no start state then.
"""

import atexit
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..values.core_writer import write_core
from ..values.process_values import values_of
from .core_snapshot import live_snapshot, live_state

_folders = []  # the temporary folders of the start states, removed at exit


def keep_known_states(session, buffered):
    """Give ``session``'s trace the live process as its end state and, unless ``buffered``, a start state."""
    process = session.target.GetProcess()
    values = values_of(session.trace)
    values.live_end = lambda tid: live_state(process, tid)
    if hasattr(session.backend, "state_arrays"):  # the software recorder reads the registers at each stop
        values.live_states = session.backend.state_arrays
    if buffered:
        return
    folder = Path(tempfile.mkdtemp(prefix="lldb-trace-start-"))
    _folders.append(folder)
    path = folder / "start.core"
    write_core(live_snapshot(process), path)
    session.trace.process = replace(session.trace.process, start_core_file=path)


@atexit.register
def _remove_folders():
    for folder in _folders:
        shutil.rmtree(folder, ignore_errors=True)
