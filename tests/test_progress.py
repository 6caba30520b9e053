"""Long work reports progress and stops on an interrupt, keeping nothing half-done (issue 17, item 4).

An interrupt is simulated by a reporter that says "interrupt requested" after a number of checks:
what matters is that the work stops where it checks, cleans up, and runs again to the same result.
"""

import json
import os
from pathlib import Path

import pytest
from support.paths import HISTORY
from support.progress_log import Recorder

from lldb_trace import progress
from lldb_trace.decode import process_image
from lldb_trace.decode.parallel import decode_pieces
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

EXCEPTIONS = HISTORY / "exceptions"


def opened(workers=1):
    bundle = load_trace(EXCEPTIONS / "trace.json")
    return ProcessTrace(bundle, bundle.processes[0], workers=workers)


def test_a_decode_reports_its_progress_in_trace_bytes():
    trace = opened()
    tid = trace.tids[0]
    reporter = Recorder()
    with progress.reporting(reporter):
        decoded = trace.decoded(tid)
        trace.call_forest(tid)
    size = len(trace.trace_bytes(tid))
    decoding, building = f"Decoding the trace of thread {tid}", f"Building the call tree of thread {tid}"
    assert reporter.log[0] == ("begin", decoding, size)
    advances = [done for kind, handle, *done in reporter.log if kind == "advance" and handle == decoding]
    assert advances and advances == sorted(advances) and max(d[0] for d in advances) <= size
    assert ("end", decoding) in reporter.log
    assert ("begin", building, decoded.item_count) in reporter.log  # then its items, slice by slice
    assert ("end", building) in reporter.log
    assert decoded.instruction_count == 27877


def test_an_interrupted_call_tree_build_keeps_nothing_and_builds_again(monkeypatch):
    from lldb_trace.decode import forest_builder

    monkeypatch.setattr(forest_builder, "SLICE", 64)  # many slices, so the build checks many times
    trace = opened()
    tid = trace.tids[0]
    trace.decoded(tid)
    reporter = Recorder(stop_at=3)  # the task's start, then the first two slices
    with progress.reporting(reporter), pytest.raises(progress.WorkInterruptedError) as raised:
        trace.call_forest(tid)
    assert str(raised.value) == f"interrupted: building the call tree of thread {tid} stopped; run the command again"
    assert trace.forest_if_built(tid) is None
    assert len(trace.call_forest(tid)) == len(opened().call_forest(tid))


@pytest.mark.parametrize("stop_at", [1, 2])
def test_an_interrupted_decode_keeps_nothing_and_runs_again(stop_at):
    trace = opened()
    tid = trace.tids[0]
    with progress.reporting(Recorder(stop_at)), pytest.raises(progress.WorkInterruptedError) as raised:
        trace.decoded(tid)
    assert str(raised.value).startswith("interrupted: decoding the trace of thread")
    assert trace.decoded_if_done(tid) is None
    assert trace.decoded(tid).instruction_count == opened().decoded(tid).instruction_count


def children():
    """The pids of this process's children, zombies included (other tests may leave a pool's behind)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():  # the parent's pid, after the state
            found.add(int(stat.parent.name))
    return found


def test_an_interrupted_parallel_decode_leaves_no_child_behind():
    before = children()
    trace = opened()
    tid = trace.tids[0]
    data = trace.trace_bytes(tid)
    reporter = Recorder(stop_at=2)  # the first check is the task's start
    image = process_image(trace.process)
    with (
        progress.reporting(reporter),
        pytest.raises(progress.WorkInterruptedError),
        progress.task("pieces", len(data)) as task,
    ):
        decode_pieces(data, trace.cpu, image, trace.expander, 4, task)
    assert children() <= before  # every child the decode forked was killed and reaped


def test_without_a_reporter_nothing_is_asked():
    assert progress.use(None) is None
    with progress.task("quiet", 10) as task:
        task.at(5)


def progress_events(listener, lldb):
    """``(title, completed, total)`` of every progress event the listener got."""
    events, event = [], lldb.SBEvent()
    while listener.GetNextEvent(event):
        data = lldb.SBDebugger.GetProgressDataFromEvent(event)
        stream = lldb.SBStream()
        if data.IsValid() and data.GetAsJSON(stream).Success():
            found = json.loads(stream.GetData())
            events.append((found["title"], found["completed"], found["total"]))
    return events


def test_lldb_shows_the_decode_with_its_progress_api(tmp_path):
    lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        listener = lldb.SBListener("lldb_trace progress")
        session.debugger.GetBroadcaster().AddListener(listener, 0xFFFFFFFF)  # SBProgress: "external" progress
        session.ok(f"pt load {EXCEPTIONS / 'trace.json'}")
        tid = session.target.GetProcess().GetSelectedThread().GetThreadID()
        decoding = [e for e in progress_events(listener, lldb) if e[0] == f"Decoding the trace of thread {tid}"]
        size = (EXCEPTIONS / "traces" / f"{tid}.intelpt_trace").stat().st_size
        assert decoding[0][1:] == (0, size) and decoding[-1][1:] == (size, size)
    finally:
        session.close()


def test_an_interrupted_load_leaves_no_target_and_loads_again(tmp_path, monkeypatch):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    from lldb_trace.debugger import progress_reporter

    checks = []
    monkeypatch.setattr(
        progress_reporter.LldbReporter, "interrupt_requested", lambda self: checks.append(1) or len(checks) >= 2
    )
    session = Session(tmp_path)
    try:
        result = session.handle(f"pt load {EXCEPTIONS / 'trace.json'}")
        assert not result.Succeeded() and session.debugger.GetNumTargets() == 0
        assert result.GetError().startswith("error: interrupted: decoding the ")  # the whole trace, or its end first
        assert "trace of thread" in result.GetError()
        assert result.GetError().count("\n") == 1
        monkeypatch.undo()
        session.ok(f"pt load {EXCEPTIONS / 'trace.json'}")
        assert "the_end" in session.ok("bt")
    finally:
        session.close()


class _StopWhenBuilding(Recorder):
    """Asks to stop at the first check once the first piece's call tree is being built (after its decode)."""

    def interrupt_requested(self):
        return any(kind == "begin" and title.startswith("Building the call tree of") for kind, title, *_ in self.log)


def test_an_interrupted_piece_forest_leaves_no_child_behind_and_builds_again(monkeypatch):
    from lldb_trace.decode import forest_builder

    monkeypatch.setattr(forest_builder, "SLICE", 64)  # many slices, so the build checks many times
    before = children()
    trace = opened(workers=4)
    monkeypatch.setattr("lldb_trace.decode.PIECE_MIN_BYTES", 1)
    tid = trace.tids[0]
    reporter = _StopWhenBuilding()
    with progress.reporting(reporter), pytest.raises(progress.WorkInterruptedError) as raised:
        trace.call_forest(tid)
    assert str(raised.value).startswith("interrupted: building the call tree of trace bytes 0..")
    assert children() <= before
    assert trace.decoded_if_done(tid) is None and trace.forest_if_built(tid) is None
    assert len(trace.call_forest(tid)) == len(opened().call_forest(tid))
