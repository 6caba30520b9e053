"""LLDB's own unwinding checked against the trace's calls (debugger/unwind_check.py).

printf_then_crash.c recorded, and loaded from its end core alone: in printf's last instructions LLDB unwinds
the stack at some positions (every register known) and is given the trace's frames at others.  Going from one
of the latter to the next position in the same function, LLDB unwound frame 0 from a wrong frame address: a
caller standing at frame 0's pc, the next at a stack address, and the function's locals read from the wrong
place.  Every position's frames must now go on where the trace's calls do.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SOURCES

from lldb_trace import api

lldb = pytest.importorskip("lldb")

from lldb_trace.debugger import histories  # noqa: E402 (after LLDB's bindings are known to be there)
from lldb_trace.debugger.unwind_check import _standing  # noqa: E402


@pytest.fixture(scope="module")
def end_core_only(tmp_path_factory):
    folder = tmp_path_factory.mktemp("printf_then_crash")
    binary = folder / "printf_then_crash"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "printf_then_crash.c")], check=True)
    recorder = Path(sys.executable).parent / "lldb-trace"
    subprocess.run([str(recorder), "record", "-o", str(folder / "rec"), "--", str(binary)], capture_output=True,
                   timeout=300, check=True)  # fmt: skip
    bundle = json.loads((folder / "rec" / "trace.json").read_text())
    process = bundle["processes"][0]
    process.pop("startCoreFile")
    process["threads"][0].pop("registerStates")
    path = folder / "rec" / "end_core_only.json"
    path.write_text(json.dumps(bundle))
    return path


def test_every_position_in_printf_shows_frames_that_go_on_where_the_trace_does(session, end_core_only):
    thread = api.open_bundle(end_core_only).threads[0]
    positions = [k for k in range(thread.item_count) if "__vfprintf_internal" in str(thread.item(k))][-40:]
    session.ok(f"trace load {end_core_only}")
    unwound_somewhere = False
    for position in positions:
        session.ok(f"pt goto {position}")
        target = session.debugger.GetSelectedTarget()
        lldb_thread = target.GetProcess().GetSelectedThread()
        standing = _standing([lldb_thread.GetFrameAtIndex(k) for k in range(lldb_thread.GetNumFrames())])
        history = histories.history_of(target, lldb_thread.GetThreadID())
        given = [pc for _frame, pc in histories.shown_frames(target, history)]
        if standing[: len(given)] == given[: len(standing)]:
            continue  # the trace's own frames
        unwound_somewhere = True
        going_on = [frame.resumes_at for frame in history.frames()]
        assert all(a == b for a, b in zip(standing, going_on, strict=False) if b is not None), position
    assert unwound_somewhere
