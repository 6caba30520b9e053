"""Random and corrupted traces: decoding always returns a well-formed trace, never raises or hangs.

Inputs: random bytes, random bytes laced with PSBs and pieces of a real
stream, and the basic scenario's real stream mutated (bit flips, truncation,
bytes inserted and deleted, PSB-to-PSB ranges duplicated).  Each is decoded by
decode_thread_trace with one worker and in pieces on forked workers (the
piece size floor is lowered so these small traces are cut too).  Whatever
libipt makes of it, the result must hold only instructions and gaps,
numbered 0..n-1 without holes, walk backwards as the exact reverse of
forwards, and be readable from any index.  A worker that dies is a gap item.

A time limit guards every example: SIGALRM fails the test when Python code
hangs, and faulthandler ends the run (with every thread's traceback) if a
hang inside the C library never returns to Python, so CI is never blocked.
"""

import contextlib
import faulthandler
import os
import random
import signal
import struct
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.paths import TRACES
from support.trace_scripts import scenarios

import lldb_trace.decode
from lldb_trace.decode import decode_part, decode_thread_trace, parallel, process_image
from lldb_trace.decode.cursor import TraceCursor, walk
from lldb_trace.decode.decoded_thread import DecodedThread, Gap
from lldb_trace.decode.parallel import CHILD_CRASHED, _PieceDecoder, psb_offsets
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

EXAMPLE_SECONDS = 20  # one example: decode twice and walk both ways (normally well under a second)
HANG_EXIT_SECONDS = 120  # a hang that SIGALRM cannot break (inside libipt): end the whole run
PSB = bytes.fromhex("0282") * 8
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class ExampleTimeoutError(Exception):
    """An example ran past EXAMPLE_SECONDS."""


@contextlib.contextmanager
def time_limit(seconds=EXAMPLE_SECONDS):
    def expired(_signum, _frame):
        raise ExampleTimeoutError(f"decoding did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    faulthandler.dump_traceback_later(HANG_EXIT_SECONDS, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    """The basic scenario: its ProcessTrace, image, and raw stream (re-recorded if this machine's libc differs)."""
    folder = TRACES / "basic"
    if not scenarios.modules_match(folder / "trace.json"):
        folder = scenarios.make(scenarios.BY_NAME["basic"], tmp_path_factory.mktemp("basic") / "basic").parent
    bundle = load_trace(folder)
    trace = ProcessTrace(bundle, bundle.processes[0], workers=1)
    with process_image(bundle.processes[0]) as image:
        yield trace, image, trace.trace_bytes(trace.tids[0])


def decode(basic, data, workers):
    trace, image, _ = basic
    # Cut even tiny traces into pieces (an empty one stays below the floor: decode_pieces needs bytes).
    with mock.patch.object(lldb_trace.decode, "PIECE_MIN_BYTES", 1):
        return decode_thread_trace(data, trace.cpu, image, trace.expander, workers)


def check_well_formed(decoded, expander, seed=0):
    count = decoded.item_count
    assert count == decoded.instruction_count + decoded.error_count
    forwards = list(walk(decoded, 0, True, expander))
    assert [index for index, _ in forwards] == list(range(count))
    for index, value in forwards:
        assert isinstance(value, int) or (isinstance(value, Gap) and value.index == index), (index, value)
    assert list(walk(decoded, count - 1, False, expander)) == forwards[::-1]
    assert [gap.index for gap in decoded.gaps] == [index for index, value in forwards if isinstance(value, Gap)]
    event_indices = [event.index for event in decoded.events]
    assert event_indices == sorted(event_indices) and all(0 <= i <= count for i in event_indices)
    if count:
        rng = random.Random(seed)
        cursor = TraceCursor(decoded, expander, forwards=rng.random() < 0.5)
        for index in {0, count - 1, *(rng.randrange(count) for _ in range(10))}:
            assert cursor.seek(index)
            item = cursor.item()
            assert item.index == index and (item.gap or item.address) == forwards[index][1]
        assert decoded.timestamp(count - 1) is None or decoded.timestamp(count - 1) >= 0
    assert decoded.end_ip is None or isinstance(decoded.end_ip, int)
    assert decoded.storage_bytes >= 0


def check_both_ways(basic, data):
    trace, _image, _ = basic
    with time_limit():
        for workers in (1, 2):
            decoded = decode(basic, data, workers)
            assert isinstance(decoded, DecodedThread)
            check_well_formed(decoded, trace.expander, seed=len(data))
            if workers == 2:  # what the inputs reach (pytest --hypothesis-show-statistics)
                event(f"pieces: {len(decoded.parts)}")
                event("instructions" if decoded.instruction_count else "no instruction")
                event("gaps" if decoded.error_count else "no gap")
            for gap in decoded.gaps:
                assert gap.code != CHILD_CRASHED, gap.text  # libipt must survive it all, in a child too


# -- inputs ---------------------------------------------------------------------------------------


@st.composite
def laced(draw, real):
    """Random bytes with PSBs and slices of the real stream in between."""
    parts = draw(
        st.lists(
            st.one_of(
                st.binary(max_size=96),
                st.just(PSB),
                st.tuples(st.integers(0, len(real) - 1), st.integers(1, 200)).map(lambda s: real[s[0] : s[0] + s[1]]),
            ),
            max_size=40,
        )
    )
    return b"".join(parts)


@st.composite
def mutated(draw, real, psbs):
    """The real stream after a few random mutations."""
    data = bytearray(real)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "truncate", "drop-head", "insert", "delete", "duplicate-psb-range"]))
        size = max(len(data), 1)
        if kind == "flip":
            for _ in range(draw(st.integers(1, 8))):
                position = draw(st.integers(0, size - 1))
                if position < len(data):
                    data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[draw(st.integers(0, size)) :]
        elif kind == "drop-head":
            del data[: draw(st.integers(0, size))]
        elif kind == "insert":
            position = draw(st.integers(0, len(data)))
            data[position:position] = draw(st.one_of(st.binary(min_size=1, max_size=32), st.just(PSB)))
        elif kind == "delete":
            position = draw(st.integers(0, size - 1))
            del data[position : position + draw(st.integers(1, 32))]
        else:
            # A PSB-to-PSB range of the original, repeated somewhere (at a PSB or anywhere).
            bounds = [*psbs, len(real)]
            first = draw(st.integers(0, len(psbs) - 1))
            last = draw(st.integers(first + 1, len(bounds) - 1))
            chunk = real[bounds[first] : bounds[last]]
            at = draw(st.one_of(st.sampled_from(bounds), st.integers(0, len(real))))
            at = min(at, len(data))
            data[at:at] = chunk
    return bytes(data)


# -- properties -----------------------------------------------------------------------------------


@FUZZ
@given(data=st.one_of(st.binary(max_size=8192), st.binary(max_size=8192).map(lambda tail: PSB + tail)))
def test_random_bytes(basic, data):
    """Random bytes, half of them after a PSB so the decoder syncs and reads them as packets."""
    check_both_ways(basic, data)


@FUZZ
@given(data=st.data())
def test_random_bytes_laced_with_psbs_and_real_packets(basic, data):
    check_both_ways(basic, data.draw(laced(basic[2])))


@FUZZ
@given(data=st.data())
def test_mutated_real_trace(basic, data):
    real = basic[2]
    check_both_ways(basic, data.draw(mutated(real, psb_offsets(real))))


def test_the_unmutated_trace_decodes_the_same_with_one_or_two_workers(basic):
    trace, _image, real = basic
    with time_limit():
        one, two = decode(basic, real, 1), decode(basic, real, 2)
    assert len(two.parts) == 2 and one.error_count == 0
    assert list(walk(one, 0, True, trace.expander)) == list(walk(two, 0, True, trace.expander))


# -- a worker that dies ---------------------------------------------------------------------------


def dies_in_children(how):
    """A _PieceDecoder.decode that ends every forked worker as ``how`` says, and works in the parent."""
    parent = os.getpid()
    original = _PieceDecoder.decode

    def decode_or_die(self, job, *task):
        if os.getpid() == parent:
            return original(self, job, *task)
        if how == "killed":
            os.kill(os.getpid(), signal.SIGKILL)  # as a crash inside libipt would end it
        if how == "exits":
            os._exit(3)
        if how == "raises":
            raise RuntimeError("the worker fails")  # fork()'s cleanup ends it without sending anything
        raise AssertionError(how)

    return decode_or_die


@pytest.mark.parametrize("how", ["killed", "exits", "raises"])
def test_a_worker_that_dies_is_a_gap_not_an_exception(basic, how):
    trace, image, real = basic
    psbs = psb_offsets(real)
    assert len(psbs) >= 3
    with time_limit(), mock.patch.object(_PieceDecoder, "decode", dies_in_children(how)):
        decoded = decode(basic, real, 3)
    check_well_formed(decoded, trace.expander)
    crashed = [gap for gap in decoded.gaps if gap.code == CHILD_CRASHED]
    assert len(crashed) == 2 == len(decoded.gaps)  # one per forked piece; the parent's piece decoded
    assert all("the decoder died on trace bytes" in gap.text for gap in crashed)
    whole = DecodedThread([decode_part(real, trace.cpu, image)])
    first_piece = decoded.parts[0].item_count
    assert first_piece and crashed[0].index == first_piece
    expected = list(walk(whole, 0, True, trace.expander))[:first_piece]
    assert list(walk(decoded, 0, True, trace.expander))[:first_piece] == expected


def test_a_worker_sending_a_short_message_is_a_gap(basic, monkeypatch):
    """A worker whose file holds less than its length prefix announces (it died mid-write)."""
    trace, _image, real = basic

    def short_write(part, out, release=False):
        out.write(struct.pack("<Q", 1 << 20) + b"partial")
        out.flush()
        os._exit(0)

    monkeypatch.setattr(parallel, "write_part", short_write)
    with time_limit():
        decoded = decode(basic, real, 2)
    monkeypatch.undo()
    check_well_formed(decoded, trace.expander)
    assert [gap.code for gap in decoded.gaps] == [CHILD_CRASHED]
