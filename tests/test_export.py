"""pt export: each format read back as its viewer reads it, and checked against the recorder's ground truth.

The expected counts come from tests/support/ground_truth_counts.py (the
single-stepped addresses, ELF symbols and capstone), not from lldb_trace:
folded weights summed per leaf function are the instructions each function
executed itself, and each format holds one call per execution of a function.
Only the programs' own functions are compared exactly: the ground truth
counts PLT stub instructions under no function, the call tree in the
library function's frame.
"""

import functools
import json
import re
import sys
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest
from conftest import ROOT
from support.ground_truth_counts import function_table, ground_truth_counts
from support.lldb22 import needs_lldb_22, run_lldb_22

import lldb_trace.export as export_package
from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.analysis.frame_columns import Frames
from lldb_trace.analysis.item_range import ItemRange
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.errors import LldbTraceError
from lldb_trace.export import export, speedscope
from lldb_trace.export.stacks import Axis, Job, Names, from_frames
from lldb_trace.symbolize import Location

TRACES = ROOT / "test_traces"
# (bundle, tid, the program's module name): traces without tail calls, where a frame is a called function
PROGRAMS = [
    (TRACES / "basic", 5662, "basic"),
    (TRACES / "history" / "recursion", 18153, "recursion"),
    (TRACES / "history" / "gradebook", 18418, "gradebook"),
]
BUNDLE_OF = {program: bundle for bundle, _tid, program in PROGRAMS} | {"threads": TRACES / "threads"}
pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="pip install perfetto")


def own(counter, program):
    """The entries of ``counter`` for the program's own functions that have a sized ELF symbol.

    (crt code such as ``deregister_tm_clones`` has symbols of size 0, which the ground truth cannot place.)
    """
    return {name: count for name, count in counter.items() if name in _sized(program) and count}


@functools.cache
def _sized(program):
    return {name for name in function_table(BUNDLE_OF[program]).names if name.startswith(f"{program}`")}


def expected_calls(bundle, tid, first=0, last=None):
    """Ground-truth calls, plus the call the recording started inside (its function is running at item 0)."""
    counts = ground_truth_counts(bundle, tid, first, last)
    address = GroundTruth.read(bundle / "ground_truth" / f"{tid}.txt").addresses[first]
    counts.calls[function_table(bundle).name_at(address)[0]] += 1
    return counts


def chrome_events(path):
    document = json.loads(path.read_text())
    return document, [event for event in document["traceEvents"] if event["ph"] == "X"]


def folded_leaves(path):
    """Weight per leaf function, and the total."""
    leaves = Counter()
    for line in path.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        leaves[stack.split(";")[-1]] += int(weight)
    return leaves, sum(leaves.values())


def speedscope_replay(document, profile):
    """Calls opened per function and the axis length each function was innermost, from the O/C events."""
    names = [frame["name"] for frame in document["shared"]["frames"]]
    opened, innermost, stack, last = Counter(), Counter(), [], profile["startValue"]
    for event in profile["events"]:
        assert event["at"] >= last, "events go back in time"
        if stack:
            innermost[names[stack[-1]]] += event["at"] - last
        last = event["at"]
        if event["type"] == "O":
            stack.append(event["frame"])
            opened[names[event["frame"]]] += 1
        else:
            assert stack.pop() == event["frame"], "a close event does not close the innermost call"
    assert not stack and last <= profile["endValue"]
    return opened, innermost


def perfetto_slices(path):
    """Per thread (tid): slices begun per name, the instants, and the threads' track descriptors.

    The traces read here have no timestamps: a slice begins at its first item's index, in microseconds.
    """
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    names, tracks, begun, instants, depth, last = {}, {}, {}, {}, Counter(), Counter()
    for packet in trace.packet:
        assert packet.trusted_packet_sequence_id == 1
        names.update({name.iid: name.name for name in packet.interned_data.event_names})
        if packet.HasField("track_descriptor") and packet.track_descriptor.HasField("thread"):
            tracks[packet.track_descriptor.uuid] = packet.track_descriptor.thread.tid
        if not packet.HasField("track_event"):
            continue
        event, tid = packet.track_event, tracks[packet.track_event.track_uuid]
        assert packet.timestamp >= last[tid]
        last[tid] = packet.timestamp
        if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            assert packet.timestamp == event.debug_annotations[0].int_value * 1000
            begun.setdefault(tid, Counter())[names[event.name_iid]] += 1
            depth[tid] += 1
        elif event.type == pb.TrackEvent.TYPE_SLICE_END:
            depth[tid] -= 1
            assert depth[tid] >= 0
        else:
            instants.setdefault(tid, []).append((packet.timestamp, names[event.name_iid], event))
    assert not any(depth.values()), "a slice was left open"
    return begun, instants, tracks


@pytest.mark.parametrize(("bundle", "tid", "program"), PROGRAMS, ids=lambda p: getattr(p, "name", None))
def test_every_format_matches_the_ground_truth(tmp_path, bundle, tid, program):
    thread = api.open_bundle(bundle).thread(tid)
    truth = expected_calls(bundle, tid)
    calls, exclusive = own(truth.calls, program), own(truth.exclusive, program)
    assert calls and exclusive

    export(thread, "folded", tmp_path / "out.folded")
    leaves, total = folded_leaves(tmp_path / "out.folded")
    assert own(leaves, program) == exclusive and total == truth.instructions

    export(thread, "chrome", tmp_path / "out.json")
    document, events = chrome_events(tmp_path / "out.json")
    assert own(Counter(event["name"] for event in events), program) == calls
    assert {(event["pid"], event["tid"]) for event in events} == {(thread.process_trace.pid, tid)}
    assert "item indices" in document["otherData"]["timeAxis"]
    # without timestamps a call starts at its first item's index, as whole microseconds
    assert all(event["ts"] == event["args"]["first item"] and isinstance(event["dur"], int) for event in events)

    export(thread, "speedscope", tmp_path / "out.speedscope.json")
    document = json.loads((tmp_path / "out.speedscope.json").read_text())
    (profile,) = document["profiles"]
    assert profile["type"] == "evented" and profile["unit"] == "none"
    # the file says what speedscope shows: plain numbers (unit "none"), not microseconds
    assert "shown as plain numbers, 1 per item" in document["exporter"] and "µs" not in document["exporter"]
    opened, innermost = speedscope_replay(document, profile)
    assert own(opened, program) == calls and own(innermost, program) == exclusive

    export(thread, "perfetto", tmp_path / "out.pftrace")
    begun, _instants, tracks = perfetto_slices(tmp_path / "out.pftrace")
    assert list(tracks.values()) == [tid] and own(begun[tid], program) == calls


def test_a_range_exports_only_its_items(tmp_path):
    bundle, tid, program = PROGRAMS[0]
    thread = api.open_bundle(bundle).thread(tid)
    export(thread, "folded", tmp_path / "out.folded", item_range="2000:4999")
    leaves, total = folded_leaves(tmp_path / "out.folded")
    truth = ground_truth_counts(bundle, tid, 2000, 4999)
    assert own(leaves, program) == own(truth.exclusive, program) and total == 3000
    export(thread, "speedscope", tmp_path / "out.json", item_range="2000:4999")
    (profile,) = json.loads((tmp_path / "out.json").read_text())["profiles"]
    assert (profile["startValue"], profile["endValue"]) == (2000, 5000)


def test_threads_get_a_track_each(tmp_path):
    trace = api.open_bundle(TRACES / "threads")
    tids = [thread.tid for thread in trace.threads]
    assert len(tids) == 4
    export(trace, "chrome", tmp_path / "out.json")
    document, events = chrome_events(tmp_path / "out.json")
    named = {event["tid"]: event["args"]["name"] for event in document["traceEvents"] if event["name"] == "thread_name"}
    assert named == {tid: f"thread {tid}" for tid in tids}
    export(trace, "perfetto", tmp_path / "out.pftrace")
    begun, _instants, _tracks = perfetto_slices(tmp_path / "out.pftrace")
    export(trace, "speedscope", tmp_path / "out.speedscope.json")
    document = json.loads((tmp_path / "out.speedscope.json").read_text())
    assert [profile["name"].split(" of ")[0] for profile in document["profiles"]] == [f"thread {t}" for t in tids]
    export(trace, "folded", tmp_path / "out.folded")
    leaves = {}  # per thread root: weight per leaf
    for line in (tmp_path / "out.folded").read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        frames = stack.split(";")
        leaves.setdefault(frames[0], Counter())[frames[-1]] += int(weight)
    for tid, profile in zip(tids, document["profiles"], strict=True):
        truth = expected_calls(TRACES / "threads", tid)
        assert own(leaves[f"thread {tid} (threads)"], "threads") == own(truth.exclusive, "threads")
        assert sum(leaves[f"thread {tid} (threads)"].values()) == truth.instructions
        # the workers' calls (the main thread's signal handler is a frame that no call instruction opened)
        workers = truth.calls["threads`worker"]
        assert workers == (tid != trace.processes[0].pid)
        assert sum(event["name"] == "threads`worker" for event in events if event["tid"] == tid) == workers
        assert begun[tid]["threads`worker"] == speedscope_replay(document, profile)[0]["threads`worker"] == workers


def test_timestamps_give_a_time_axis_with_exact_fractions(tmp_path):
    thread = api.open_bundle(TRACES / "timestamps").threads[0]
    export(thread, "chrome", tmp_path / "out.json")
    text = (tmp_path / "out.json").read_text()
    document, events = chrome_events(tmp_path / "out.json")
    assert document["displayTimeUnit"] == "ns" and "nanoseconds" in document["otherData"]["timeAxis"]
    assert all(re.fullmatch(r"\d+\.\d{3}", ts) for ts in re.findall(r'"ts":([^,]+),', text))
    # each call's start and end are the analysis layer's times, to the nanosecond
    times = ThreadTimes(thread.decoded, thread.process_trace.bundle.tsc_conversion)
    origin = times.origin()
    raw = re.findall(r'"ts":([\d.]+),"dur":([\d.]+),"pid":\d+,"tid":\d+,"args":\{"first item":(\d+)', text)
    assert len(raw) == len(events) == 198
    fractional = 0
    for ts, dur, first in raw:
        start = int(Decimal(ts) * 1000)
        assert start == times.at([int(first)])[0] - origin
        fractional += start % 1000 != 0 or int(Decimal(dur) * 1000) % 1000 != 0
    assert fractional
    assert own(Counter(e["name"] for e in events), "basic") == own(
        expected_calls(TRACES / "timestamps", 5683).calls, "basic"
    )

    export(thread, "speedscope", tmp_path / "out.speedscope.json")
    document = json.loads((tmp_path / "out.speedscope.json").read_text())
    (profile,) = document["profiles"]
    assert profile["unit"] == "nanoseconds"
    speedscope_replay(document, profile)

    export(thread, "folded", tmp_path / "time.folded", weight="time")
    _leaves, total = folded_leaves(tmp_path / "time.folded")
    assert total == times.at([thread.item_count])[0] - origin  # every nanosecond of the trace, once

    export(thread, "chrome", tmp_path / "long.json", min_duration="10us")
    _document, kept = chrome_events(tmp_path / "long.json")
    assert kept and all(event["dur"] >= 10 for event in kept)
    export(thread, "chrome", tmp_path / "ns.json", min_duration="10000")
    assert chrome_events(tmp_path / "ns.json")[1] == kept


def test_gaps_are_instant_events(tmp_path):
    thread = api.open_bundle(TRACES / "overflow").threads[0]
    (gap,) = thread.decoded.gaps
    export(thread, "chrome", tmp_path / "out.json")
    _document, events = chrome_events(tmp_path / "out.json")
    instants = [e for e in json.loads((tmp_path / "out.json").read_text())["traceEvents"] if e["ph"] == "i"]
    assert [(e["ts"], e["args"]["item"], e["args"]["error"]) for e in instants] == [(gap.index, gap.index, gap.text)]
    assert not any(e["ts"] < gap.index < e["ts"] + e["dur"] for e in events), "a call spans the gap"
    export(thread, "perfetto", tmp_path / "out.pftrace")
    _begun, instants, _tracks = perfetto_slices(tmp_path / "out.pftrace")
    ((timestamp, name, event),) = instants[thread.tid]
    assert (timestamp, name) == (gap.index * 1000, "gap") and event.debug_annotations[1].string_value == gap.text


def test_min_duration_drops_short_calls_and_keeps_their_weight_in_the_caller(tmp_path):
    bundle, tid, _program = PROGRAMS[0]
    thread = api.open_bundle(bundle).thread(tid)
    export(thread, "chrome", tmp_path / "all.json")
    export(thread, "chrome", tmp_path / "long.json", min_duration=10)
    _document, every = chrome_events(tmp_path / "all.json")
    _document, kept = chrome_events(tmp_path / "long.json")
    assert kept == [event for event in every if event["args"]["instructions"] >= 10]
    assert len(kept) < len(every)
    export(thread, "folded", tmp_path / "long.folded", min_duration=10)
    leaves, total = folded_leaves(tmp_path / "long.folded")
    assert total == ground_truth_counts(bundle, tid).instructions
    assert "basic`twice" not in leaves  # 7 instructions a call


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
