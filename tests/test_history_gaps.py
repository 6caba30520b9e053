"""Moving through history next to gaps: several in a row, a trace that ends in gaps, calls lost in a gap.

test_traces/missing-module ran into a libc nobody has: its trace has gaps at
1508, 1521, 2118-2120 (a call's return lost among them) and ends with two
(2258, 2259); test_traces/overflow has one overflow in the middle.  Every
movement, both ways, from positions all along them must end where a thread can
stand (in range, never on a gap) or say why it cannot move.
"""

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.paths import TRACES

from lldb_trace import api
from lldb_trace.decode.forest_builder import UNTRACED_START
from lldb_trace.history import HistoryError
from lldb_trace.history.frames import FrameMap

MISSING_MODULE = TRACES / "missing-module" / "trace.json"
OVERFLOW = TRACES / "overflow" / "trace.json"
MOVEMENTS = ("stepi", "nexti", "step", "next", "finish")
CROSSED = "crossed a gap in the trace (no memory mapped at this address): what ran there is unknown"


def history_of(bundle):
    (thread,) = api.open_bundle(bundle).threads
    return thread.history


def gaps_of(history):
    return [index for index in range(history.end) if history.map.is_gap(index)]


@pytest.mark.parametrize(
    ("bundle", "stride"), [(MISSING_MODULE, 5), (OVERFLOW, 41)], ids=["missing-module", "overflow"]
)
def test_every_movement_ends_where_a_thread_can_stand(bundle, stride):
    history = history_of(bundle)
    gaps = gaps_of(history)
    assert gaps
    near_gaps = {gap + offset for gap in gaps for offset in (-2, -1, 1, 2)}
    starts = sorted({*range(0, history.end, stride), *near_gaps, history.end} - set(gaps))
    for start in (position for position in starts if 0 <= position <= history.end):
        for name in MOVEMENTS:
            for reverse in (False, True):
                history.position = start
                try:
                    movement = getattr(history, name)(reverse=reverse)
                except HistoryError:
                    continue
                where = f"{'reverse-' if reverse else ''}{name} from {start}"
                assert 0 <= movement.position <= history.end, where
                assert movement.position == history.position, where
                assert movement.position == history.end or not history.map.is_gap(movement.position), where
                assert history.frames() and history.pc is not None, where


def test_a_trace_that_ends_in_gaps_is_left_backwards_across_them():
    history = history_of(MISSING_MODULE)
    assert gaps_of(history)[-2:] == [history.end - 2, history.end - 1]
    (frame,) = history.frames()  # what ran last, and in which function, is unknown
    assert frame.row is None and frame.outermost_traced
    for name in MOVEMENTS:
        history.position = history.end
        movement = getattr(history, name)(reverse=True)
        assert (movement.position, movement.message) == (history.end - 3, CROSSED), name
        history.position = history.end
        movement = getattr(history, name)()
        assert (movement.position, movement.message) == (history.end, "No more reverse-execution history."), name


def test_stepi_crosses_a_run_of_gaps_in_one_step():
    history = history_of(MISSING_MODULE)
    assert {2118, 2119, 2120} <= set(gaps_of(history))
    history.goto(2117)
    movement = history.stepi()
    assert (movement.position, movement.message) == (2121, CROSSED)
    movement = history.stepi(reverse=True)
    assert (movement.position, movement.message) == (2117, CROSSED)


def test_going_back_over_a_call_lost_in_a_gap_stops_beside_the_gap():
    """_dl_sort_maps's call was lost in the gaps 2118-2120: reverse-finish from inside it cannot reach it."""
    history = history_of(MISSING_MODULE)
    history.goto(2255)  # _dl_sort_maps's ret, which the trace saw after the gaps
    movement = history.finish(reverse=True)
    assert movement.position == 2121
    assert movement.message.startswith("stopped at a gap in the trace (no memory mapped")


HISTORY_COMMANDS = [
    "pt reverse-step", "pt goto end", "pt reverse-next", "pt goto end", "pt reverse-finish", "pt goto end",
    "pt reverse-nexti", "pt goto end", "pt finish", "pt step", "pt next", "pt goto 2117", "pt stepi", "pt next",
]  # fmt: skip


def test_history_commands_at_a_trace_ending_in_gaps_in_lldb(tmp_path):
    lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        session.ok(f"trace load {MISSING_MODULE}")
        results = [session.handle(command) for command in HISTORY_COMMANDS]
    finally:
        session.close()
    assert all(result.Succeeded() for result in results), [result.GetError() for result in results]
    out = "".join(result.GetOutput() for result in results)
    assert "internal error" not in out and lldb is not None
    assert out.count(CROSSED) == 5 and "Position: instruction 2121 of 2260." in out


@needs_lldb_22
def test_history_commands_at_a_trace_ending_in_gaps_in_lldb_22(tmp_path):
    result = run_lldb_22(tmp_path, [f"trace load {MISSING_MODULE}", *HISTORY_COMMANDS])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "internal error" not in output and "Traceback" not in output
    assert output.count(CROSSED) == 5 and "Position: instruction 2121 of 2260." in output


def test_a_history_that_is_one_gap_has_nowhere_else_to_stand(tmp_path):
    """Without the system's libc a worker thread's whole trace is one gap (start_thread's code is missing)."""
    from support.hostile_inputs import copy_seed

    history = api.open_bundle(copy_seed("threads", tmp_path)).thread(5675).history
    assert history.end == 1 and history.map.is_gap(0)
    for movement in (history.continue_([], reverse=True), history.step(reverse=True), history.stepi(reverse=True)):
        assert movement.position == history.position == history.end
        assert movement.message.startswith("stopped at a gap in the trace")
    with pytest.raises(HistoryError, match="is a gap in the trace"):
        history.goto(0)


class _EndingForest:
    """A tree whose first frame (row 0) returned at the trace's last instruction: its untraced caller (row 1) is
    named by where the return went, which the trace does not hold (entry 0)."""

    parent, entry, flags = [1, -1], [0x401000, 0], [0, UNTRACED_START]

    def call_item(self, row):
        return -1 if row == 0 else None


def test_a_caller_whose_return_ends_the_trace_has_no_known_place():
    """Its frame was given pc 0, and LLDB's unwinding looked up address -1 (an internal error in the stop reason,
    seen after a gap inside a signal handler)."""
    frames = FrameMap(None, None, _EndingForest()).frames_from(0, 0x401234)
    assert [(frame.pc, frame.resumes_at) for frame in frames] == [(0x401234, 0x401234), (None, None)]
