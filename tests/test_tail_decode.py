"""Decoding a trace from its end (decode/tail.py) gives exactly the end of a whole decode.

Every committed scenario and every PSB case (a PSB before a branch, after a
re-enable, inside control flow) is decoded backwards one PSB period at a time
and compared with one pass: the same items, gaps and events at the same
distance from the end; a tail that reaches the first PSB is the whole decode.
"""

import pytest
from support.scenario_decoding import SCENARIOS, events, sequence

from lldb_trace.decode.parallel import psb_offsets
from lldb_trace.decode.tail import TraceTail


def tail_of(opened, tid):
    trace = opened.trace.trace_bytes(tid)
    return TraceTail(trace, opened.trace.cpu, opened.image, opened.trace.expander)


def from_end(decoded, expander):
    """``sequence`` with each index counted from the end (-1: the last item)."""
    return [(index - decoded.item_count, value) for index, value in sequence(decoded, expander)]


def events_from_end(decoded):
    return [(index - decoded.item_count, kind) for index, kind in events(decoded)]


def check_tail(opened, tid):
    expander = opened.trace.expander
    whole = opened.single_pass(tid)
    expected = from_end(whole, expander)
    tail = tail_of(opened, tid)
    periods = len(psb_offsets(opened.trace.trace_bytes(tid)))
    wanted = 1
    while not tail.complete:
        decoded = tail.extend(wanted)
        assert decoded.instruction_count >= min(wanted, whole.instruction_count)
        got = from_end(decoded, expander)
        assert got == expected[len(expected) - len(got) :], f"thread {tid}: the tail is not the end of one pass"
        assert events_from_end(decoded) == events_from_end(whole)[len(events(whole)) - len(events(decoded)) :]
        assert decoded.end_ip == whole.end_ip
        wanted = decoded.instruction_count + 1
        periods -= 1
        assert periods >= -1, "the tail did not stop at the first PSB"
    decoded = tail.decoded
    assert sequence(decoded, expander) == sequence(whole, expander)
    assert events(decoded) == events(whole)
    assert tail.start_offset == 0
    return decoded


@pytest.mark.parametrize("name", SCENARIOS)
def test_decoding_from_the_end_gives_the_end_of_one_pass(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        check_tail(opened, tid)


@pytest.mark.parametrize("name", ["before-branch", "after-reenable", "control"])
def test_psb_cases_decode_from_the_end_like_one_pass(psb_case, name):
    opened = psb_case(name)
    [tid] = opened.tids
    check_tail(opened, tid)


def test_a_tail_decodes_only_its_last_periods(scenario):
    opened = scenario("basic")
    [tid] = opened.tids
    trace = opened.trace.trace_bytes(tid)
    last_psb = psb_offsets(trace)[-1]
    tail = tail_of(opened, tid)
    decoded = tail.extend(1)
    assert tail.start_offset == last_psb and not tail.complete
    assert 0 < decoded.instruction_count < opened.single_pass(tid).instruction_count


def test_an_empty_trace_has_an_empty_complete_tail(scenario):
    opened = scenario("basic")
    tail = TraceTail(b"", opened.trace.cpu, opened.image, opened.trace.expander)
    assert tail.extend(10).item_count == 0 and tail.complete
