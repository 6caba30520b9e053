"""pt export's formats read back as their viewers read them, and the ground truth the tests compare them with.

The expected counts come from support/ground_truth_counts.py (the
single-stepped addresses, ELF symbols and capstone), not from lldb_trace.
"""

import functools
import json
from collections import Counter

import pytest

from lldb_trace.capture.encoder.ground_truth import GroundTruth

from .ground_truth_counts import function_table, ground_truth_counts
from .paths import HISTORY, TRACES

# (bundle, tid, the program's module name): traces without tail calls, where a frame is a called function
PROGRAMS = [
    (TRACES / "basic", 5662, "basic"),
    (HISTORY / "recursion", 15936, "recursion"),
    (HISTORY / "gradebook", 6289, "gradebook"),
]
BUNDLE_OF = {program: bundle for bundle, _tid, program in PROGRAMS} | {"threads": TRACES / "threads"}
pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="pip install perfetto")


def own(counter, program):
    """The counts in ``counter`` for the program's own functions that have a sized ELF symbol.

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
