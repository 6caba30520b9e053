"""pt profile: rows per function, line and module, checked against what the recorded programs really ran.

The reference is the recorder's ground truth (every executed address, not
decoded): per-function instruction and call counts (support/ground_truth_counts.py),
and a shadow call stack walked over it with capstone (push at a call, pop at a
return, rename at a jump into another function's first instruction) for the
inclusive counts.  Ground truth and decoded trace number instructions alike when
the trace has no gaps, so ranges are ground-truth slices.  Exact comparisons are
made on the programs' own functions (those defined in their sources): the ground
truth counts a PLT stub's instructions under no function, the call forest in the
frame of the function the stub reached.  Times, module rows and programs the
shadow stack cannot follow (signal handlers, longjmp, exceptions, swapcontext)
are checked against a per-item walk of the call forest (another algorithm than
the profile's).
"""

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import capstone
import pytest
from conftest import ROOT
from support.ground_truth_counts import function_table, ground_truth_counts
from support.lldb22 import needs_lldb_22, run_lldb_22

from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.analysis.item_range import RangeError
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.profile import ProfileError, by_address, profile
from lldb_trace.views.profile import profile_json, profile_text

TRACES = ROOT / "test_traces"
SOURCES = TRACES / "src"
HISTORY = TRACES / "history"
DEFINITION = re.compile(r"^(?!typedef|return)[A-Za-z_][\w \t\*\(\)]*?\b(\w+)\([^;]*?\)\s*\{", re.M)
# (bundle, tid, the sources defining the program's own functions)
CASES = [
    (TRACES / "basic", 5662, ["basic.c"]),
    (TRACES / "crash", 5707, ["crash.c"]),
    (TRACES / "threads", 5675, ["threads.c"]),
    (TRACES / "threads", 5677, ["threads.c"]),
    (HISTORY / "recursion", 18153, ["recursion.c"]),
    (HISTORY / "tailcall", 18330, ["tailcall.c"]),
    (HISTORY / "qsort_callback", 18211, ["qsort_callback.c"]),
    (HISTORY / "lines", 18182, ["lines.c"]),
    (HISTORY / "gradebook", 18418, ["gradebook.c"]),
    (HISTORY / "nodebug", 18243, ["nodebug.c", "nodebug_lib.c"]),
]
CASE_IDS = [f"{folder.name}-{tid}" for folder, tid, _ in CASES]


@cache
def thread_of(folder, tid):
    thread = api.open_bundle(folder).thread(tid)
    assert not thread.decoded.gaps  # ground truth index == item index
    return thread


def own_functions(folder, sources):
    program = Path(json.loads((folder / "trace.json").read_text())["processes"][0]["modules"][0]["systemPath"]).name
    return {f"{program}`{name}" for source in sources for name in DEFINITION.findall((SOURCES / source).read_text())}


class ShadowStack:
    """The ground truth walked with a call stack of ``[entry address, call instruction's index]`` frames."""

    def __init__(self, folder, tid):
        self.addresses = GroundTruth.read(folder / "ground_truth" / f"{tid}.txt").addresses
        self.table = function_table(folder)
        self._disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._disassembler.detail = True
        self._kinds = {}

    def kind(self, address):
        if address not in self._kinds:
            found = next(self._disassembler.disasm(self.table.code_at(address), address, 1), None)
            groups = {capstone.CS_GRP_CALL: "call", capstone.CS_GRP_RET: "ret", capstone.CS_GRP_JUMP: "jump"}
            self._kinds[address] = next((k for g, k in groups.items() if found and found.group(g)), None)
        return self._kinds[address]

    def walk(self):
        """``(index, address, frames outermost first, how)`` per instruction; ``how`` says how the last frame
        was just entered: "call" (a call instruction ran), "entry" (it reached a function's first instruction:
        by a call, a tail call, or a PLT stub's jump), "call entry" (both), or "" (neither)."""
        addresses = self.addresses
        stack = [[addresses[0], -1]]
        yield 0, addresses[0], stack, ""
        for index in range(1, len(addresses)):
            previous, address = addresses[index - 1], addresses[index]
            kind = self.kind(previous)
            name, start = self.table.name_at(address)
            how = ""
            if kind == "call":
                stack.append([address, index - 1])
                how = "call entry" if address == start else "call"
            elif kind == "ret":
                if len(stack) > 1:
                    stack.pop()
                else:  # the function the trace began in returned to its untraced caller
                    stack[0] = [address, -1]
            elif kind == "jump" and address == start and self.table.name_at(previous)[0] != name:
                stack[-1][0] = address  # a tail call, or a PLT stub reaching its function
                how = "entry"
            yield index, address, stack, how


@cache
def shadow_stack(folder, tid):
    return ShadowStack(folder, tid)


def truth_rows(folder, tid, by, first, last):
    """``(calls, exclusive, inclusive)`` Counters from the ground truth by function or line (items first..last)."""
    shadow, locate = shadow_stack(folder, tid), thread_of(folder, tid).symbolizer.locate
    name_at = lambda address: shadow.table.name_at(address)[0]  # noqa: E731

    def line_of(address):
        location = locate(address)
        return location.source or location.function_label

    calls, exclusive, inclusive = Counter(), Counter(), Counter()
    for index, address, stack, how in shadow.walk():
        if index > last:
            break
        if index < first:
            continue
        frame = stack[-1]
        if by == "function":
            if "entry" in how and frame[1] >= first:
                calls[name_at(address)] += 1
            own = name_at(address)
            keys = {own} | {name_at(entry) for entry, _ in stack}
        else:
            if "call" in how and frame[1] >= first:
                calls[line_of(shadow.addresses[frame[1]])] += 1
            own = line_of(address)
            keys = {own} | {line_of(shadow.addresses[call]) for _, call in stack if call >= 0}
        exclusive[own] += 1
        for key in keys:
            inclusive[key] += 1
    return calls, exclusive, inclusive


def rows_by_name(made):
    return {row.name: row for row in made.rows}


def assert_rows(made, calls, exclusive, inclusive, names):
    rows = rows_by_name(made)
    for name in names:
        row = rows.get(name)
        got = (row.calls, row.exclusive, row.inclusive) if row else (0, 0, 0)
        assert got == (calls[name], exclusive[name], inclusive[name]), name


def slices(count):
    """Ranges cutting through the trace: the whole, halves, and stretches starting and ending anywhere."""
    return [(0, count - 1), (0, count // 2), (count // 2, count - 1), (count // 3, 2 * count // 3), (7, count - 9)]


@pytest.mark.parametrize(("folder", "tid", "sources"), CASES, ids=CASE_IDS)
def test_function_rows_match_the_ground_truth(folder, tid, sources):
    thread = thread_of(folder, tid)
    own = own_functions(folder, sources)
    whole = ground_truth_counts(folder, tid)
    made = profile(thread.process_trace, tid, thread.symbolizer)
    assert made.instructions == whole.instructions == sum(row.exclusive for row in made.rows)
    rows = rows_by_name(made)
    for name in own & set(whole.exclusive):
        tail_calls = 6 if name == "tailcall`leaf" else 0  # entered by a jump: a call the ground truth does not count
        assert (rows[name].exclusive, rows[name].calls) == (whole.exclusive[name], whole.calls[name] + tail_calls)
    for first, last in slices(whole.instructions):
        made = profile(thread.process_trace, tid, thread.symbolizer, "function", f"{first}:{last}")
        assert made.instructions == last - first + 1 == sum(row.exclusive for row in made.rows)
        assert_rows(made, *truth_rows(folder, tid, "function", first, last), own)


@pytest.mark.parametrize(("folder", "tid", "sources"), CASES, ids=CASE_IDS)
def test_line_rows_match_the_ground_truth(folder, tid, sources):
    thread = thread_of(folder, tid)
    count = thread.decoded.instruction_count
    for first, last in slices(count):
        made = profile(thread.process_trace, tid, thread.symbolizer, "line", f"{first}:{last}")
        calls, exclusive, inclusive = truth_rows(folder, tid, "line", first, last)
        assert {row.name: row.exclusive for row in made.rows if row.exclusive} == +exclusive
        assert made.instructions == sum(exclusive.values()) == last - first + 1
        own_lines = {row.name for row in made.rows if row.fields["file"] and Path(row.fields["file"]).name in sources}
        assert own_lines
        assert_rows(made, calls, exclusive, inclusive, own_lines)


def forest_rows(thread, by, first, last):
    """Per row name: ``[calls, exclusive, inclusive, exclusive time, inclusive time]``, from each item's open
    frames (CallForest.open_at) and each item's duration (the next item's time less its own)."""
    forest, locate = thread.call_forest(), thread.symbolizer.locate
    times = ThreadTimes(thread.decoded, thread.process_trace.bundle.tsc_conversion)
    addresses = [item.address for item in thread.items(first, limit=last - first + 1)]

    def own(address, row):
        location = locate(address)
        if by == "function":
            return frame_key(row)
        return location.source or location.function_label if by == "line" else location.module or "(no module)"

    @cache
    def frame_key(row):
        if by == "line":
            item = forest.call_item(row)
            return own(thread.item(item).address, row) if item is not None and item >= 0 else None
        entry = int(forest.entry[row])
        location = locate(entry) if entry else None
        if by == "module":
            return location.module if location else None
        if location is None:
            return "(unknown)"
        return location.function_label if location.function else f"{location.module}`0x{entry:x}"

    rows = {}
    durations = times.at(list(range(first + 1, last + 2))) - times.at(list(range(first, last + 1)))
    for index, address, duration in zip(range(first, last + 1), addresses, durations.tolist(), strict=True):
        stack = forest.open_at(index)
        mine = own(address, stack[0])
        for key in {mine} | {frame_key(row) for row in stack} - {None}:
            row = rows.setdefault(key, [0, 0, 0, 0, 0])
            row[2] += 1
            row[4] += duration
            if key == mine:
                row[1] += 1
                row[3] += duration
    for call in forest.calls():
        entered = first <= call.first <= last and not call.untraced_start
        item = call.call_item
        by_call = item is not None and item >= first
        if entered and (by_call and not call.tail_call if by == "line" else by_call or call.asynchronous):
            rows.setdefault(frame_key(call.row), [0, 0, 0, 0, 0])[0] += 1
    return rows


FOREST_CASES = [
    (TRACES / "timestamps", 5683),
    (TRACES / "threads", 5674),
    (HISTORY / "signal_handler", 18389),
    (HISTORY / "longjmp", 18272),
    (HISTORY / "contexts", 18360),
    (HISTORY / "exceptions", 18301),
]


@pytest.mark.parametrize("by", ["function", "line", "module"])
@pytest.mark.parametrize(("folder", "tid"), FOREST_CASES, ids=[f"{f.name}-{t}" for f, t in FOREST_CASES])
def test_rows_and_times_match_a_walk_of_every_item(folder, tid, by):
    thread = api.open_bundle(folder).thread(tid)
    count = thread.decoded.item_count
    for first, last in slices(count):
        made = profile(thread.process_trace, tid, thread.symbolizer, by, f"{first}:{last}")
        expected = forest_rows(thread, by, first, last)
        if made.time_unit is None:
            expected = {name: values[:3] for name, values in expected.items()}
        got = {
            row.name: [row.calls, row.exclusive, row.inclusive]
            + ([row.exclusive_time, row.inclusive_time] if made.time_unit else [])
            for row in made.rows
        }
        assert got == expected


def test_times_add_up_and_are_absent_without_timing():
    timed = api.open_bundle(TRACES / "timestamps").thread(5683)
    times = ThreadTimes(timed.decoded, timed.process_trace.bundle.tsc_conversion)
    for by in ("function", "line", "module"):
        made = profile(timed.process_trace, 5683, timed.symbolizer, by, "100:6000")
        assert made.time_unit == "ns" and made.time == int(times.at([6001])[0] - times.at([100])[0]) > 0
        assert sum(row.inclusive_time > 0 for row in made.rows) > 1
        assert "times in ns" in profile_text(made, made.rows) and "exclusive ns  inclusive ns" in profile_text(
            made, made.rows
        )
        assert all("exclusiveTime" in row for row in json.loads(profile_json(made, made.rows, "time"))["rows"])
    untimed = thread_of(HISTORY / "recursion", 18153)
    made = profile(untimed.process_trace, 18153, untimed.symbolizer, "line")
    assert made.time_unit is None and made.time is None
    assert all(row.exclusive_time is None and row.inclusive_time is None for row in made.rows)
    text = profile_text(made, made.rows)
    assert "no timing in this trace" in text and " ns" not in text and "ticks" not in text
    document = json.loads(profile_json(made, made.rows, "exclusive"))
    assert document["timeUnit"] is None and "time" not in document
    assert not any(key.endswith("Time") for row in document["rows"] for key in row)
    with pytest.raises(ProfileError, match=r"^cannot sort by time: the trace of thread 18153 has no timing$"):
        made.sorted_rows("time")


def test_the_table_and_json_of_the_recursion_program():
    thread = thread_of(HISTORY / "recursion", 18153)
    made = profile(thread.process_trace, 18153, thread.symbolizer)
    assert profile_text(made, made.rows[:2]).splitlines() == [
        "Profile of thread 18153 by function: items 0:346 (347 instructions), no timing in this trace",
        "calls  exclusive       %  inclusive       %  function",
        "   15        236   68.0%        236   68.0%  recursion`fib",
        "    8         98   28.2%         98   28.2%  recursion`fact",
        "   23        347  100.0%                     total (2 of 3 functions)",
        "... 1 more function: '-c 0' shows all",
    ]
    assert [row.name for row in made.sorted_rows("inclusive")] == ["recursion`main", "recursion`fib", "recursion`fact"]
    assert [row.name for row in made.sorted_rows("name")] == ["recursion`fact", "recursion`fib", "recursion`main"]
    lines = profile(thread.process_trace, 18153, thread.symbolizer, "line", "10:100")
    assert [row.name for row in lines.sorted_rows("name")][:3] == ["recursion.c:10", "recursion.c:11", "recursion.c:12"]
    document = json.loads(profile_json(lines, lines.rows[:1], "exclusive"))
    compiled_at = document["rows"][0].pop("file")  # the path DWARF names: where the program was built
    assert compiled_at.endswith("/test_traces/src/recursion.c")
    assert document == {
        "thread": 18153, "by": "line", "range": {"first": 10, "last": 100}, "instructions": 91, "calls": 7,
        "timeUnit": None, "sort": "exclusive", "rowCount": 7,
        "rows": [{
            "name": "recursion.c:13", "line": 13, "function": "recursion`fact",
            "calls": 6, "exclusive": 29, "exclusiveShare": 0.318681, "inclusive": 79, "inclusiveShare": 0.868132,
        }],
    }  # fmt: skip


def test_bad_input_is_one_line(tmp_path):
    thread = thread_of(HISTORY / "recursion", 18153)
    process_trace = thread.process_trace
    with pytest.raises(ProfileError, match=r"^unknown grouping 'file': choose function, line or module$"):
        profile(process_trace, 18153, thread.symbolizer, "file")
    with pytest.raises(RangeError, match=r"^range 5:2 holds no items: the thread has items 0 to 346$"):
        profile(process_trace, 18153, thread.symbolizer, "line", "5:2")
    with pytest.raises(RangeError, match=r"^bad range 'abc'"):
        profile(process_trace, 18153, thread.symbolizer, "function", "abc")
    with pytest.raises(ProfileError, match=r"^unknown sort 'size'"):
        profile(process_trace, 18153, thread.symbolizer).sorted_rows("size")
    document = json.loads((TRACES / "static" / "trace.json").read_text())
    process = document["processes"][0]
    for entry in process["threads"]:
        entry["iptTrace"] = str(TRACES / "static" / entry["iptTrace"])
    for module in process["modules"]:
        module["file"] = str(TRACES / "static" / module["file"])
    process["threads"].append({"tid": 99999})
    (tmp_path / "trace.json").write_text(json.dumps(document))
    traceless = api.open_bundle(tmp_path / "trace.json").thread(99999)
    with pytest.raises(ProfileError, match=r"^thread 99999 has no trace to profile$"):
        profile(traceless.process_trace, 99999, traceless.symbolizer)


@pytest.fixture
def session(tmp_path):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    yield session
    session.close()


def test_pt_profile_in_lldb(session, tmp_path):
    assert session.handle("pt profile").GetError() == "error: no target: load a trace with 'trace load BUNDLE'\n"
    session.ok(f"trace load {HISTORY / 'recursion' / 'trace.json'}")
    thread = thread_of(HISTORY / "recursion", 18153)
    expected = profile(thread.process_trace, 18153, thread.symbolizer, "line", "10:100")
    shown = json.loads(session.ok("pt profile --by line --range 10:100 --json -c 0"))
    assert shown == json.loads(profile_json(expected, expected.rows, "exclusive"))
    text = session.ok("pt profile -c 2 --sort inclusive")
    assert text.splitlines()[:3] == [
        "Profile of thread 18153 by function: items 0:346 (347 instructions), no timing in this trace",
        "calls  exclusive       %  inclusive       %  function",
        "    0         13    3.7%        347  100.0%  recursion`main",
    ]
    assert "... 1 more function: '-c 0' shows all" in text
    assert "total (1 of 1 module)" in session.ok("pt profile -b mod -s name -t 18153")
    written = tmp_path / "profile.txt"
    wrote = session.ok(f"pt profile --by line --file {written}")
    assert wrote.strip() == f"wrote the profile of thread 18153 to {written}"
    assert written.read_text().startswith("Profile of thread 18153 by line:")
    errors = {
        "pt profile --by file": "unknown by 'file': choose function, line or module",
        "pt profile --range 5:2": "range 5:2 holds no items: the thread has items 0 to 346",
        "pt profile --range 12": "bad range '12': write FROM:TO with item indices, e.g. 1000:2000",
        "pt profile -s size": "unknown sort 'size': choose exclusive, inclusive, calls, name, time or inclusive-time",
        "pt profile -s time": "cannot sort by time: the trace of thread 18153 has no timing",
        "pt profile -t 7": "process 18153 has no traced thread 7 (its threads: 18153)",
        "pt profile -t 18153 -t 18153": "pt profile profiles one thread: give -t once",
        f"pt profile --file {tmp_path / 'absent' / 'p.txt'}": f"cannot write {tmp_path / 'absent' / 'p.txt'}: the"
        f" folder {tmp_path / 'absent'} does not exist",
    }
    for command, error in errors.items():
        assert session.handle(command).GetError() == f"error: {error}\n", command
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".profile-")) == []


@needs_lldb_22
def test_pt_profile_in_debians_lldb_22(tmp_path):
    written = tmp_path / "profile.json"
    commands = [
        f"trace load {TRACES / 'timestamps' / 'trace.json'}",
        "pt profile -b module",
        f"pt profile --by line --range 100:6000 --json -c 0 --file {written}",
        "pt profile --by nothing",
    ]
    run = run_lldb_22(tmp_path, commands)
    assert run.returncode != 0 and "error: unknown by 'nothing': choose function, line or module" in run.stderr
    assert "Profile of thread 5683 by module: items 0:8476 (8477 instructions), times in ns" in run.stdout
    assert re.search(r"\n\s+196\s+8477\s+100\.0%\s+587993765\s+total \(3 of 3 modules\)", run.stdout), run.stdout
    thread = api.open_bundle(TRACES / "timestamps").thread(5683)
    expected = profile(thread.process_trace, 5683, thread.symbolizer, "line", "100:6000")
    assert json.loads(written.read_text()) == json.loads(profile_json(expected, expected.rows, "exclusive"))


def test_counting_by_address_in_chunks_changes_nothing(monkeypatch):
    """Lines and modules are counted a chunk of items at a time (bounded memory); chunk edges cut blocks."""
    thread = api.open_bundle(TRACES / "cycles").threads[0]
    whole = {
        by: profile(thread.process_trace, thread.tid, thread.symbolizer, by, "7:8000") for by in ("line", "module")
    }
    monkeypatch.setattr(by_address, "CHUNK_ITEMS", 97)
    for by, expected in whole.items():
        chunked = profile(thread.process_trace, thread.tid, thread.symbolizer, by, "7:8000")
        assert [vars(row) for row in chunked.rows] == [vars(row) for row in expected.rows]
