"""The decoder (lldb_trace.decode, plain Python) against single-stepped ground truth.

Every committed scenario of test_traces/ is decoded through ProcessTrace and
compared with the addresses the recorder single-stepped; committed scenarios
recorded against other shared libraries are re-recorded from their recipe
first (as in test_recorder.py).  Then: cursors walk the same items both ways
and from any index; decoding in pieces cut at PSBs equals one pass; decoded
storage stays compact.  The PSB placements native LLDB mis-decodes are in
test_psb_placements.py.
"""

import dataclasses
import itertools
import json
import random
import re
from pathlib import Path

import pytest
from support import reference_decode
from support.scenario_decoding import (
    SCENARIOS,
    addresses,
    check_pieces_match_single_pass,
    open_bundle,
    runs,
)
from support.trace_scripts import scenarios

from lldb_trace import libipt
from lldb_trace.decode import ModuleBytes
from lldb_trace.decode.cursor import TraceCursor, walk
from lldb_trace.decode.decoded_thread import Gap
from lldb_trace.libipt import ErrorCode, EventType

EXACT = [name for name in SCENARIOS if name != "missing-module"]  # decode with no gap at all


# -- 1. every scenario decodes to its ground truth ------------------------------------------------


@pytest.mark.parametrize("name", EXACT)
def test_every_thread_decodes_to_its_ground_truth(scenario, name):
    opened = scenario(name)
    assert opened.tids
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        expected = opened.expected(tid)
        assert addresses(decoded, opened.trace.expander) == expected, f"thread {tid}"
        lost = len(opened.truth(tid).lost)  # each overflow is one gap item, as in native LLDB
        assert decoded.error_count == lost and [gap.code for gap in decoded.gaps] == [ErrorCode.OVERFLOW] * lost
        assert decoded.instruction_count == len(expected) and decoded.item_count == len(expected) + lost


def test_overflow_is_a_gap_exactly_where_the_recipe_lost_instructions(scenario):
    opened = scenario("overflow")
    recipe = scenarios.BY_NAME["overflow"].options
    [tid] = opened.tids
    truth = opened.truth(tid)
    [(lost_start, lost_end)] = truth.lost
    # The recorder overflows right after the first packet-carrying branch from overflow_at on, and
    # resumes at the first plain instruction once overflow_lost instructions went by.
    assert recipe.overflow_at < lost_start <= recipe.overflow_at + 64
    assert recipe.overflow_lost <= lost_end - lost_start <= recipe.overflow_lost + 64
    recorded = json.loads((opened.folder / "recording.json").read_text())["instructions"][str(tid)]
    assert recorded == len(truth.addresses)

    decoded = opened.trace.decoded(tid)
    overflows = [event for event in decoded.events if event.type == EventType.OVERFLOW]
    assert [event.index for event in overflows] == [lost_start]  # before the first instruction after the loss
    assert decoded.instruction_count == recorded - (lost_end - lost_start)
    decoded_addresses = addresses(decoded, opened.trace.expander)
    around = 300
    assert decoded_addresses[lost_start - around : lost_start] == list(
        truth.addresses[lost_start - around : lost_start]
    )
    assert decoded_addresses[lost_start : lost_start + around] == list(truth.addresses[lost_end : lost_end + around])
    cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
    cursor.seek(lost_start)
    gap = cursor.item()
    assert [e.type for e in gap.events] == [EventType.OVERFLOW] and gap.gap.code == ErrorCode.OVERFLOW
    cursor.next()
    assert cursor.item().address == truth.addresses[lost_end]


def test_timestamps_are_present_and_never_go_back(scenario):
    opened = scenario("timestamps")
    recorded_seconds = json.loads((opened.folder / "recording.json").read_text())["seconds"]
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        assert decoded.has_timestamps
        cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
        stamps = [item.tsc for item in cursor.items()]
        assert len(stamps) == decoded.item_count
        assert None not in stamps
        assert all(a <= b for a, b in itertools.pairwise(stamps))
        assert stamps == [decoded.timestamp(index) for index in range(decoded.item_count)]
        assert len(set(stamps)) > 3  # time moves: a TSC at every PSB and every re-enable
        # The recorder's TSC counts CLOCK_MONOTONIC nanoseconds, within the recording's run time.
        assert 0 < stamps[-1] - stamps[0] <= recorded_seconds * 1e9


def test_scenarios_without_timing_have_no_timestamps(scenario):
    decoded = scenario("basic").trace.decoded(scenario("basic").tids[0])
    assert not decoded.has_timestamps and decoded.timestamp(0) is None


def test_snapshot_decodes_to_the_tail_of_the_ground_truth(scenario):
    opened = scenario("snapshot")
    [tid] = opened.tids
    truth = opened.truth(tid)
    assert 0 < truth.snapshot_from < len(truth.addresses)
    decoded = opened.trace.decoded(tid)
    assert addresses(decoded, opened.trace.expander) == list(truth.addresses[truth.snapshot_from :])
    assert decoded.error_count == 0
    assert EventType.ENABLED not in [event.type for event in decoded.events[:1]]  # it starts mid-run, at a PSB


def test_crash_ends_at_the_faulting_instruction(scenario):
    opened = scenario("crash")
    [tid] = opened.tids
    truth = opened.truth(tid)
    faulting = int(re.search(r" at (0x[0-9a-f]+)", truth.ended).group(1), 16)
    assert opened.trace.decoded(tid).end_ip == faulting


def test_missing_module_gaps_are_exactly_where_execution_entered_it(scenario):
    opened = scenario("missing-module")
    assert scenarios.BY_NAME["missing-module"].missing_module == "libc.so.6"
    module_bytes = ModuleBytes(opened.trace.process.modules)
    assert not any(Path(m.system_path).name == "libc.so.6" for m in opened.trace.process.modules)

    def in_missing_module(address):
        return module_bytes.segment_at(address) is None

    [tid] = opened.tids
    truth = list(opened.truth(tid).addresses)
    decoded = opened.trace.decoded(tid)
    found = runs(decoded, opened.trace.expander)
    gaps = decoded.gaps
    assert len(found) == len(gaps) + 1 and gaps
    assert all(gap.code == ErrorCode.NOMAP for gap in gaps)

    # The same gaps as libipt's own instruction decoder, after the same instruction counts.
    reference = reference_decode.decode_thread(opened.folder / "trace.json", tid)
    reference_gaps, count = [], 0
    for item in reference:
        if isinstance(item, libipt.Insn):
            count += 1
        elif isinstance(item, tuple) and item[0] == "error":
            reference_gaps.append((count, item[1]))
    assert [(gap.index - k, gap.code) for k, gap in enumerate(gaps)] == reference_gaps

    position = 0  # where in the ground truth the previous run ended
    last_ip = None
    for k, (_gap_before, run) in enumerate(found):
        if run:
            # Each run is a contiguous stretch of the ground truth, after the previous one.
            start = next(
                (s for s in range(position, len(truth) - len(run) + 1) if truth[s : s + len(run)] == run), None
            )
            assert start is not None, f"run {k} ({len(run)} instructions) is not in the ground truth"
            position = start + len(run)
            last_ip = run[-1]
        if k < len(gaps):
            gap = gaps[k]
            assert gap.last_ip == last_ip  # the last instruction decoded before it, however many gaps ago
            if run:
                # The run stops exactly where the thread jumped into the missing module.
                assert position < len(truth) and in_missing_module(truth[position]), f"gap {k}"
    assert not any(in_missing_module(a) for _gap, run in found for a in run)
    decoded_count = sum(len(run) for _gap, run in found)
    assert decoded.instruction_count == decoded_count < len(truth)


# -- 2. cursors -------------------------------------------------------------------------------------


def check_cursor(decoded, expander, seed):
    forwards = list(walk(decoded, 0, True, expander))
    assert [index for index, _ in forwards] == list(range(decoded.item_count))  # no holes, no repeats
    backwards = list(walk(decoded, decoded.item_count - 1, False, expander))
    assert backwards == forwards[::-1]
    assert all(isinstance(value, int | Gap) for _, value in forwards)

    cursor = TraceCursor(decoded, expander)  # backwards from the newest item, as the dump command reads
    items = list(cursor.items())
    assert [(item.index, item.gap or item.address) for item in items] == backwards
    assert not cursor.has_value and not cursor.next()

    rng = random.Random(seed)
    count = decoded.item_count
    picks = {0, count - 1, *(rng.randrange(count) for _ in range(60))}
    for forward in (True, False):
        cursor = TraceCursor(decoded, expander, forwards=forward)
        for index in sorted(picks):
            assert cursor.seek(index) and cursor.has_value
            item = cursor.item()
            assert item.index == index and (item.gap or item.address) == forwards[index][1]
            assert item.events == decoded.events_before(index)
        assert cursor.seek(-1) and cursor.item().index == count - 1
        assert cursor.seek(-count) and cursor.item().index == 0
        assert not cursor.seek(count) and not cursor.seek(-count - 1)
    # A bounded read moves the cursor past what it gave; the next read continues there.
    cursor = TraceCursor(decoded, expander, forwards=True)
    start = rng.randrange(count)
    cursor.seek(start)
    first = [item.index for item in cursor.items(limit=7)]
    second = [item.index for item in cursor.items(limit=7)]
    assert first + second == list(range(start, min(count, start + 14)))


@pytest.mark.parametrize("name", SCENARIOS)
def test_cursor_walks_the_same_items_both_ways_and_from_anywhere(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        check_cursor(opened.trace.decoded(tid), opened.trace.expander, seed=tid)


@pytest.mark.parametrize("name", SCENARIOS)
def test_cursor_across_parts_of_a_decode_in_pieces(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        trace = opened.trace.trace_bytes(tid)
        decoded = opened.pieces(tid, len(trace))
        check_cursor(decoded, opened.trace.expander, seed=tid)


# -- 3. decoding in pieces equals one pass --------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_decoding_in_pieces_equals_one_pass(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        whole = check_pieces_match_single_pass(opened, tid)
        assert whole.item_count == opened.trace.decoded(tid).item_count


def test_timestamp_ticks_are_the_same_events_in_pieces_as_in_one_pass(scenario):
    """Time changes show as TICK events between items; a piece restating the time adds none."""
    opened = scenario("timestamps")
    [tid] = opened.tids
    trace = opened.trace.trace_bytes(tid)

    def ticks(decoded):
        cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
        return [(item.index, item.tsc) for item in cursor.items() for e in item.events if e.type == EventType.TICK]

    whole = ticks(opened.single_pass(tid))
    assert len(whole) >= 5 and [tsc for _, tsc in whole] == sorted(tsc for _, tsc in whole)
    assert ticks(opened.pieces(tid, len(trace))) == whole


# -- 4. storage size ----------------------------------------------------------------------------------

COMPACT = ["basic", "static", "threads", "timestamps", "overflow", "crash", "missing-module", "percpu", "snapshot"]


@pytest.mark.parametrize("name", COMPACT)
def test_decoded_storage_is_compact(scenario, name):
    """At most 2 bytes per instruction where a thread runs its code more than once, 2.5 where it
    hardly does (native LLDB keeps about 40 per item).

    ``snapshot`` keeps 3,349 instructions of mostly distinct code, so its table of distinct
    blocks (10 bytes a row) dominates; ``sample`` (16 instructions) is left out.
    """
    opened = scenario(name)
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        assert decoded.instruction_count > 1000
        limit = 2.5 if name == "snapshot" else 2
        assert decoded.storage_bytes / decoded.instruction_count <= limit, f"thread {tid}"


@pytest.fixture(scope="session")
def million_small(tmp_path_factory):
    """The ``million`` recipe with N=100 (about 130,000 instructions, a few seconds to record)."""
    base = scenarios.BY_NAME["million"]
    recipe = dataclasses.replace(base, name="million-100", cflags=(*base.cflags, "-DN=100"))
    path = scenarios.make(recipe, tmp_path_factory.mktemp("million") / "million-100")
    opened = open_bundle(path.parent)
    yield opened
    opened.image.close()


def test_a_long_loop_decodes_exactly_in_well_under_a_byte_per_instruction(million_small):
    opened = million_small
    [tid] = opened.tids
    decoded = opened.trace.decoded(tid)
    assert decoded.instruction_count > 100_000
    assert decoded.storage_bytes / decoded.instruction_count <= 1
    assert addresses(decoded, opened.trace.expander) == opened.expected(tid)
