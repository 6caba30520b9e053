"""Subscribers: ``thread.walk(...)`` and ``pt script``, checked against the recorded ground truth of real programs.

The counts each walk delivers are compared with counts computed from the
recorder's ground truth (every executed address) with the modules' ELF
symbols and capstone alone (support/ground_truth_counts.py), not with the
call forest the walk reads.  PLT stubs have no symbol in the ground truth
while calls through them are the library function reached, and libc has only
its exported names, so calls are compared exactly on the programs' own functions.
"""

import shutil
import subprocess
from collections import Counter

import capstone
import numpy as np
import pytest
from support.ground_truth_counts import function_table, ground_truth_counts
from support.lldb_batch import LOAD_PLUGIN
from support.paths import HISTORY, ROOT, TRACES

from lldb_trace import api, progress, subscribe
from lldb_trace.analysis.item_range import RangeError
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.subscribe import walker

BASIC = (TRACES / "basic", 5662)
RECURSION = (HISTORY / "recursion", 15936)
OVERFLOW = TRACES / "overflow"
TIMESTAMPS = TRACES / "timestamps"
EXAMPLES = ROOT / "examples"


def thread_of(case):
    folder, tid = case
    return api.open_bundle(folder).thread(tid)


def own(counter, folder):
    """The counts of the program's own functions (``program`name``) that the ground truth can see: those
    whose symbol has a size (crtstuff's __do_global_dtors_aux and the like have none)."""
    known = set(function_table(folder).names)
    return {n: c for n, c in counter.items() if n and n.startswith(f"{folder.name}`") and n in known}


def recorder(kinds=subscribe.KINDS):
    """Callbacks appending every event to one list, in the order they are called."""
    events = []
    return events, {f"on_{kind}": events.append for kind in kinds}


@pytest.mark.parametrize("case", [BASIC, RECURSION], ids=["basic", "recursion"])
def test_calls_and_instructions_per_function_match_the_ground_truth(case):
    folder, tid = case
    truth = ground_truth_counts(folder, tid)
    calls, instructions = Counter(), Counter()
    summary = thread_of(case).walk(
        on_call=lambda e: calls.update([e.function]), on_instruction=lambda e: instructions.update([e.function])
    )
    assert own(calls, folder) == own(truth.calls, folder) and own(calls, folder)
    assert own(instructions, folder) == own(truth.exclusive, folder)
    assert summary.delivered["instruction"] == truth.instructions and not summary.stopped


def test_every_instruction_is_delivered_in_order_at_its_recorded_address():
    folder, tid = BASIC
    recorded = GroundTruth.read(folder / "ground_truth" / f"{tid}.txt").addresses
    seen = []
    thread_of(BASIC).walk(on_instruction=lambda e: seen.append((e.index, e.address)))
    assert seen == list(enumerate(recorded))


@pytest.mark.parametrize("name", ["fib", "basic`fib", "f?b", "basic`f*b"])
def test_a_functions_filter_delivers_exactly_the_functions_instructions(name):
    folder, tid = BASIC
    truth = ground_truth_counts(folder, tid)
    events, callbacks = recorder(("call", "instruction"))
    summary = thread_of(BASIC).walk(**callbacks, functions=[name])
    assert {e.function for e in events} == {"basic`fib"}
    assert summary.delivered == {"call": 41, "return": 0, "gap": 0, "instruction": truth.exclusive["basic`fib"]}


def test_a_modules_filter_delivers_the_modules_code_and_calls():
    folder, tid = BASIC
    recorded = GroundTruth.read(folder / "ground_truth" / f"{tid}.txt").addresses
    segments = [(start, start + size) for start, _, size, path in function_table(folder).segments if "basic" in path]
    in_basic = sum(any(start <= a < end for start, end in segments) for a in recorded)
    events, callbacks = recorder(("call", "instruction"))
    thread_of(BASIC).walk(**callbacks, modules=["basic"])
    assert sum(e.kind == "instruction" for e in events) == in_basic
    calls = Counter(e.function for e in events if e.kind == "call")
    assert own(calls, folder) == own(ground_truth_counts(folder, tid).calls, folder)
    assert all(name.startswith("basic`") for name in calls)


def test_filtered_out_events_never_become_python_objects(monkeypatch):
    made = []

    class Counted(subscribe.Event):
        __slots__ = ()

        def __init__(self, *args):
            made.append(1)
            super().__init__(*args)

    monkeypatch.setattr("lldb_trace.subscribe.walker.Event", Counted)
    summary = thread_of(BASIC).walk(on_instruction=lambda e: None, on_call=lambda e: None, functions=["square"])
    assert len(made) == summary.events == 3 + 21  # square's calls and instructions, of 8,473 items


def test_library_functions_are_found_by_any_of_their_names():
    events, callbacks = recorder(("call", "return"))
    thread_of(BASIC).walk(**callbacks, functions=["malloc", "libc.so.6`free"])
    assert [(e.kind, e.index, e.function) for e in events] == [
        ("call", 2094, "libc.so.6`free"), ("return", 2097, "libc.so.6`free"),  # free(NULL) returns at once
        ("call", 4815, "libc.so.6`__libc_malloc"), ("return", 6459, "libc.so.6`__libc_malloc"),
    ]  # fmt: skip


def _depths_from_the_ground_truth(folder, tid):
    """The call depth at each recorded instruction: +1 after a call instruction, -1 after a return."""
    table = function_table(folder)
    disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    disassembler.detail = True
    depths, depth = [], 0
    for address in GroundTruth.read(folder / "ground_truth" / f"{tid}.txt").addresses:
        depths.append(depth)
        instruction = next(disassembler.disasm(table.code_at(address), address, 1))
        depth += instruction.group(capstone.CS_GRP_CALL) - instruction.group(capstone.CS_GRP_RET)
    return depths


def test_depths_of_calls_and_instructions_follow_the_ground_truths_calls_and_returns():
    expected = _depths_from_the_ground_truth(*RECURSION)
    events, callbacks = recorder(("call", "return", "instruction"))
    thread_of(RECURSION).walk(**callbacks)
    assert [e.depth for e in events if e.kind == "instruction"] == expected
    calls = [e for e in events if e.kind == "call"]
    assert [e.depth for e in calls] == [expected[e.index] for e in calls]
    assert max(e.depth for e in calls) == 5  # fact(5) recursing
    returns = [e for e in events if e.kind == "return"]
    assert [e.depth for e in returns] == [expected[e.index] for e in returns]  # at the call's last item


def test_events_come_in_trace_order_whatever_the_chunks():
    thread = thread_of(RECURSION)
    runs = []
    for chunk in (3, 7, 64, walker.CHUNK):
        events, callbacks = recorder()
        handlers = {kind: callbacks[f"on_{kind}"] for kind in subscribe.KINDS}
        subscribe.walk(thread, handlers, chunk=chunk)
        runs.append([(e.kind, e.index, e.depth, e.address, e.row) for e in events])
    assert all(run == runs[0] for run in runs)
    order = runs[0]
    for position, (kind, index, depth, _address, _row) in enumerate(order):
        if kind == "call":  # the call, then its first instruction, one level deeper than the one before
            assert order[position + 1][:3] == ("instruction", index, depth)
            assert order[position - 1][0] == "instruction" and order[position - 1][2] == depth - 1
        if kind == "return":  # after its last instruction; the next instruction is in the caller
            assert (order[position - 1][0], order[position - 1][1]) in (("instruction", index), ("return", index))
            assert next(e for e in order[position:] if e[0] == "instruction")[2] < depth
    call_rows = [e[4] for e in order if e[0] == "call"]
    assert sorted(call_rows) == sorted(e[4] for e in order if e[0] == "return")


def test_event_fields_and_the_call_behind_them():
    events, callbacks = recorder(("call", "return"))
    thread_of(RECURSION).walk(**callbacks, functions=["fact"])
    call, ret = events[0], next(e for e in events if e.kind == "return" and e.row == events[0].row)
    assert (call.kind, call.function, call.time, call.depth) == ("call", "recursion`fact", None, 1)
    assert call.call.first == call.index and ret.index == call.call.last == ret.call.last
    assert call.address == call.call.address and "call" in repr(call) and "recursion`fact" in repr(call)


def test_a_range_walks_those_items_only():
    folder, tid = BASIC
    first, last = 1000, 5000
    truth = ground_truth_counts(folder, tid, first, last)
    events, callbacks = recorder(("call", "instruction"))
    summary = thread_of(BASIC).walk(**callbacks, range=(first, last))
    indices = [e.index for e in events if e.kind == "instruction"]
    assert indices == list(range(first, last + 1)) and str(summary.range) == "1000:5000"
    assert own(Counter(e.function for e in events if e.kind == "call"), folder) == own(truth.calls, folder)
    assert thread_of(BASIC).walk(on_call=lambda e: None, range="1000:5000").delivered == summary.delivered | {
        "instruction": 0
    }
    with pytest.raises(RangeError):
        thread_of(BASIC).walk(on_call=lambda e: None, range="9000:")


def test_a_callback_stops_the_walk_by_returning_false_or_raising_stopwalk():
    calls = []

    def fifth_stops(event):
        calls.append(event.index)
        return len(calls) < 5

    summary = thread_of(BASIC).walk(on_call=fifth_stops, on_instruction=lambda e: None)
    assert summary.stopped and summary.stopped_at == calls[-1] and summary.delivered["call"] == 5
    assert summary.delivered["instruction"] == calls[-1]  # those before the fifth call's first instruction

    def raises_at_100(event):
        if event.index == 100:
            raise subscribe.StopWalk

    summary = thread_of(BASIC).walk(on_instruction=raises_at_100)
    assert summary.stopped_at == 100 and summary.events == 101
    assert "stopped at item 100" in str(summary)

    events = []  # calls and returns alternate: delivered one by one rather than in runs of one kind

    def first_return_stops(event):
        events.append(event)
        return False

    summary = thread_of(RECURSION).walk(on_call=events.append, on_return=first_return_stops)
    assert [e.kind for e in events] == ["call"] * 5 + ["return"]  # fact's deepest call returns first
    assert summary.delivered == {"call": 5, "return": 1, "gap": 0, "instruction": 0}
    assert summary.stopped_at == events[-1].index == events[-2].call.last


def test_gaps_are_delivered_in_place_and_no_call_returns_across_them():
    thread = api.open_bundle(OVERFLOW).threads[0]
    [gap] = [g.index for g in thread.decoded.gaps]
    events, callbacks = recorder()
    thread.walk(**callbacks)
    [event] = [e for e in events if e.kind == "gap"]
    assert (event.index, event.depth, event.function, event.address, event.call) == (gap, None, None, None, None)
    position = events.index(event)
    assert events[position - 1].index == gap - 1 and events[position + 1].index == gap + 1
    assert gap not in {e.index for e in events if e.kind == "instruction"}
    assert all(e.call.last != gap - 1 for e in events if e.kind == "return")


def test_times_are_the_items_times_and_a_calls_duration_is_return_minus_call():
    thread = api.open_bundle(TIMESTAMPS).threads[0]
    events, callbacks = recorder(("call", "return", "instruction"))
    thread.walk(**callbacks)
    indices = np.array([e.index for e in events if e.kind == "instruction"])
    times = [e.time for e in events if e.kind == "instruction"]
    from lldb_trace.analysis import ThreadTimes

    expected = ThreadTimes(thread.decoded, thread.process_trace.bundle.tsc_conversion)
    assert times == expected.at(indices).tolist() and len(set(times)) > 1
    started = {e.row: e.time for e in events if e.kind == "call"}
    for ret in (e for e in events if e.kind == "return" and e.row in started):
        assert ret.time == expected.at([ret.index + 1])[0] >= started[ret.row]


def test_mistakes_are_one_line_errors():
    thread = thread_of(BASIC)
    with pytest.raises(subscribe.FilterError, match="no function named 'fbi'"):
        thread.walk(on_call=print, functions=["fbi"])
    with pytest.raises(subscribe.WalkError, match="on_call must be callable"):
        thread.walk(on_call=42)
    assert thread.walk().events == 0  # no subscriber: nothing to do


def test_ctrl_c_stops_a_long_walk():
    class Interrupting:
        def __init__(self):
            self.checks = 0

        def begin(self, title, total):
            return title

        def advance(self, handle, done):
            pass

        def end(self, handle):
            pass

        def interrupt_requested(self):
            self.checks += 1
            return self.checks > 3

    thread = thread_of(BASIC)
    thread.call_forest()  # decoded and built before: only the walk asks
    seen = []
    handlers = {"instruction": seen.append}
    with progress.reporting(Interrupting()), pytest.raises(progress.WorkInterruptedError):
        subscribe.walk(thread, handlers, chunk=100)
    assert 0 < len(seen) < thread.item_count


# -- pt script --------------------------------------------------------------------------------------------


@pytest.fixture
def session(session):
    """conftest's in-process LLDB with the basic scenario loaded."""
    session.ok(f"trace load {BASIC[0] / 'trace.json'}")
    return session


def test_pt_script_runs_a_subscriber_module_and_prints_what_finish_returns(session):
    output = session.ok(f"pt script {EXAMPLES / 'call_counts.py'}")
    assert "        41        8  basic`fib" in output and "196 calls in all" in output
    assert session.ok(f"pt script {EXAMPLES / 'call_counts.py'} -- fib").splitlines()[1:] == [
        "        41        8  basic`fib"
    ]
    ranged = session.ok(f"pt script {EXAMPLES / 'call_counts.py'} --range 0:300 -t {BASIC[1]} -- 'basic`*'")
    calls = Counter()
    thread_of(BASIC).walk(on_call=lambda e: calls.update([e.function]), functions=["basic`*"], range="0:300")
    assert [line.split()[0] + " " + line.split()[-1] for line in ranged.splitlines()[1:]] == [
        f"{count} {name}" for name, count in calls.most_common()
    ]
    assert 0 < calls["basic`fib"] < 41
    malloc = session.ok(f"pt script {EXAMPLES / 'time_in_malloc.py'}")
    assert "total instructions" in malloc and "libc.so.6`__libc_malloc" in malloc and "libc.so.6`free" in malloc


def test_pt_script_run_gets_the_thread_and_its_prints_are_the_output(session, tmp_path):
    script = tmp_path / "hello.py"
    script.write_text(
        "from dataclasses import dataclass\n"  # a module like any other: dataclasses find it in sys.modules
        "@dataclass\n"
        "class Seen:\n"
        "    calls: int = 0\n"
        "def run(thread, args):\n"
        "    print('items', thread.item_count, 'args', args)\n"
        "    seen = Seen(thread.walk(on_call=lambda e: None).delivered['call'])\n"
        "    return seen\n"
    )
    assert session.ok(f"pt script {script} -- a b").splitlines() == ["items 8473 args ['a', 'b']", "Seen(calls=196)"]


def test_pt_script_without_finish_says_what_the_walk_delivered(session, tmp_path):
    script = tmp_path / "early.py"
    script.write_text("def on_call(event):\n    print(event.index)\n    return event.index < 20\n")
    assert session.ok(f"pt script {script}").splitlines() == [
        "18", "29", "walked items 0:8472: 2 calls delivered; stopped at item 29"
    ]  # fmt: skip


def test_pt_script_errors_name_the_scripts_line_and_lldb_goes_on(session, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("def on_call(event):\n    return 1 / 0\n")
    result = session.handle(f"pt script {script}")
    assert not result.Succeeded()
    assert result.GetError().strip() == "error: broken.py:2: ZeroDivisionError: division by zero"
    script.write_text("FUNCTIONS = ['fbi']\ndef on_call(event):\n    pass\n")
    assert "no function named 'fbi'" in session.handle(f"pt script {script}").GetError()
    script.write_text("def on_call(event)\n")
    assert session.handle(f"pt script {script}").GetError().startswith("error: broken.py:1: SyntaxError")
    script.write_text("x = 1\n")
    assert "defines neither run(thread, args) nor any of on_call" in session.handle(f"pt script {script}").GetError()
    assert "no script at" in session.handle(f"pt script {tmp_path / 'absent.py'}").GetError()
    assert "basic`fib" in session.ok(f"pt script {EXAMPLES / 'call_counts.py'}")  # still working


def test_pt_script_in_debians_lldb_22():
    binary = shutil.which("lldb-22")
    if binary is None:
        pytest.skip("Debian's lldb-22 is not installed")
    commands = [
        *LOAD_PLUGIN,
        f"trace load {BASIC[0] / 'trace.json'}",
        f"pt script {EXAMPLES / 'call_counts.py'} -- fib square",
    ]
    argv = [binary, "--no-lldbinit", "--batch", *[a for c in commands for a in ("-o", c)]]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "        41        8  basic`fib" in result.stdout and "         3        2  basic`square" in result.stdout
