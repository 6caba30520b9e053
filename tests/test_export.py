"""pt export: each format read back as its viewer reads it, and checked against the recorder's ground truth.

The expected counts come from tests/support/ground_truth_counts.py (the
single-stepped addresses, ELF symbols and capstone), not from lldb_trace:
folded weights summed per leaf function are the instructions each function
executed itself, and each format holds one call per execution of a function.
Only the programs' own functions are compared exactly: the ground truth
counts PLT stub instructions under no function, the call tree in the
library function's frame.  Errors, bounded memory and the command in both
LLDBs are test_export_failures.py.
"""

import json
import re
from collections import Counter
from decimal import Decimal

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
from support.ground_truth_counts import ground_truth_counts
from support.paths import TRACES

from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.export import export


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
