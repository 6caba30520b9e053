"""The committed bundles in tests: whether one loads on this machine, and a thread of one opened once per run.

Most were recorded against shared libraries that this machine may not have: ``loadable`` skips those.
"""

from functools import cache

import pytest

from lldb_trace import api

from .trace_scripts import scenarios


def loadable(folder):
    """Skip the test unless the bundle in ``folder`` names this machine's own copies of its libraries."""
    if not scenarios.modules_match(folder / "trace.json"):
        pytest.skip(f"{folder.name} was recorded against system libraries that differ here")


@cache
def gapless_thread(folder, tid):
    """Thread ``tid`` of the bundle in ``folder`` through the API, checked to have no gap in its trace."""
    thread = api.open_bundle(folder).thread(tid)
    assert not thread.decoded.gaps  # ground truth index == item index
    return thread
