"""pt export's failures and limits: one-line errors that leave no file, a failure half way, a missing package,
bounded memory; and the command in the pip LLDB and Debian's lldb-22.
"""

import json
import sys

import numpy as np
import pytest
from support.export_readers import (
    PROGRAMS,
    chrome_events,
    expected_calls,
    folded_leaves,
    own,
    perfetto_slices,
    speedscope_replay,
)
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.paths import TRACES

import lldb_trace.export as export_package
from lldb_trace import api
from lldb_trace.analysis.frame_columns import Frames
from lldb_trace.analysis.item_range import ItemRange
from lldb_trace.errors import LldbTraceError
from lldb_trace.export import export, speedscope
from lldb_trace.export.stacks import Axis, Job, Names, from_frames
from lldb_trace.symbolize import Location


def test_bad_requests_are_one_line_errors_and_leave_no_file(tmp_path):
    thread = api.open_bundle(PROGRAMS[0][0]).thread(PROGRAMS[0][1])
    out = tmp_path / "out.json"
    cases = [
        ({"format": "svg"}, "unknown format 'svg'"),
        ({"format": "chrome", "path": tmp_path / "missing" / "out.json"}, "does not exist"),
        ({"format": "chrome", "path": tmp_path}, "is a folder"),
        ({"format": "chrome", "item_range": "10:5"}, "holds no items"),
        ({"format": "chrome", "item_range": "a:b"}, "bad range"),
        ({"format": "chrome", "min_duration": "10us"}, "axis is instructions"),
        ({"format": "chrome", "min_duration": "-1"}, "give a length"),
        ({"format": "chrome", "weight": "time"}, "has no timestamps"),
        ({"format": "chrome", "weight": "cycles"}, "unknown weight"),
    ]
    for arguments, message in cases:
        arguments = {"path": out, **arguments}
        with pytest.raises(LldbTraceError, match=message) as raised:
            export(thread, **arguments)
        assert "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []
    timed = api.open_bundle(TRACES / "timestamps").threads[0]
    with pytest.raises(LldbTraceError, match="unknown unit 'kb'"):
        export(timed, "chrome", out, min_duration="3kb")
    out.write_text("keep me")
    with pytest.raises(LldbTraceError, match="exists: give --force"):
        export(thread, "chrome", out)
    assert out.read_text() == "keep me"


def test_a_failure_half_way_leaves_the_old_file(tmp_path, monkeypatch):
    thread = api.open_bundle(PROGRAMS[0][0]).thread(PROGRAMS[0][1])
    out = tmp_path / "out.json"
    out.write_text("old")

    def broken(out_file, threads, job):
        out_file.write("{")
        raise KeyboardInterrupt

    monkeypatch.setitem(export_package.FORMATS, "chrome", type("Broken", (), {"write": staticmethod(broken)}))
    with pytest.raises(KeyboardInterrupt):
        export(thread, "chrome", out, force=True)
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_perfetto_without_its_protos_is_a_one_line_error(tmp_path, monkeypatch):
    import perfetto.protos.perfetto.trace as package

    monkeypatch.delattr(package, "perfetto_trace_pb2")
    monkeypatch.setitem(sys.modules, "perfetto.protos.perfetto.trace.perfetto_trace_pb2", None)
    thread = api.open_bundle(PROGRAMS[0][0]).thread(PROGRAMS[0][1])
    with pytest.raises(LldbTraceError, match=r"pip install 'perfetto"):
        export(thread, "perfetto", tmp_path / "out.pftrace")
    assert list(tmp_path.iterdir()) == []


class _NoTimes:
    known, unit = False, "ticks"

    def at(self, indices):
        return np.zeros(np.shape(indices), np.int64)


class _Symbols:
    def locate(self, address):
        return Location("synthetic", f"f{address:x}", None, None, "", "")


def _synthetic_calls(count):
    """``main`` calling ``count - 1`` leaf calls of 10 instructions (2 apart), as the analysis layer gives them."""
    leaves = np.arange(count - 1, dtype=np.int64)
    first = np.concatenate([[0], 1 + 12 * leaves])
    last = np.concatenate([[12 * (count - 1) + 1], 10 + 12 * leaves])
    parent = np.concatenate([[-1], np.zeros(count - 1, np.int64)])
    entry = np.concatenate([[0x1000], 0x2000 + 0x10 * (leaves % 50)]).astype(np.uint64)
    inclusive = last - first + 1
    frames = Frames(
        range=ItemRange(0, int(last[0])), row=np.arange(count), first=first, last=last, depth=np.minimum(parent + 1, 1),
        entry=entry, parent=parent, inclusive=inclusive, exclusive=inclusive, starts_inside=np.ones(count, bool),
        gap_items=np.zeros(0, np.int64), times=_NoTimes(), instruction_count=int(inclusive[0]),
    )  # fmt: skip
    names, axis = Names(), Axis("instructions", "items")
    calls = from_frames(frames, 1, 1, "synthetic", axis, 0, names.ids(_Symbols(), entry), {})
    return calls, Job(names, axis, "synthetic", "synthetic", False)


def test_writers_stream_in_bounded_memory(tmp_path):
    """40,000 calls written in about 1 MB (the rows of one chunk): a Python object per call would take 8 MB."""
    import tracemalloc

    from lldb_trace.export import chrome, perfetto

    calls, job = _synthetic_calls(40_000)
    for module, binary in ((chrome, False), (speedscope, False), (perfetto, True)):
        path = tmp_path / module.__name__
        with open(path, "wb" if binary else "w") as out:
            tracemalloc.start()
            module.write(out, iter([calls]), job)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < 2_000_000, f"{module.__name__}: {peak} bytes"
    document = json.loads((tmp_path / speedscope.__name__).read_text())
    opened, _innermost = speedscope_replay(document, document["profiles"][0])
    assert sum(opened.values()) == 40_000


lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")


def test_pt_export_in_lldb(tmp_path):
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        session.ok(f"trace load {TRACES / 'threads' / 'trace.json'}")
        output = session.ok(f"pt export --format chrome --all-threads {tmp_path / 'all.json'}")
        assert "Wrote 303 calls of threads 5675, 5676, 5677, 5674" in output
        _document, events = chrome_events(tmp_path / "all.json")
        assert {event["tid"] for event in events} == {5674, 5675, 5676, 5677}
        output = session.ok(f"pt export -F folded -t 5675 --range 100:200 {tmp_path / 'one.folded'}")
        assert "thread 5675" in output and folded_leaves(tmp_path / "one.folded")[1] == 101
        result = session.handle(f"pt export -F speedscope --min-duration 2ms {tmp_path / 'x.json'}")
        assert not result.Succeeded() and result.GetError().count("\n") <= 1
        assert "axis is instructions" in result.GetError() and not (tmp_path / "x.json").exists()
    finally:
        session.close()


@needs_lldb_22
def test_pt_export_in_debians_lldb_22(tmp_path):
    out = tmp_path / "out.pftrace"
    commands = [f"trace load {TRACES / 'basic' / 'trace.json'}", f"pt export -F perfetto {out}"]
    run = run_lldb_22(tmp_path, commands)
    assert run.returncode == 0, run.stderr + run.stdout
    begun, _instants, _tracks = perfetto_slices(out)
    assert own(begun[5662], "basic") == own(expected_calls(TRACES / "basic", 5662).calls, "basic")
