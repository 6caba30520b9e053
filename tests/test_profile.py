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
from support.committed_bundles import gapless_thread
from support.ground_truth_counts import function_table, ground_truth_counts
from support.paths import HISTORY, SOURCES, TRACES

from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.profile import profile

DEFINITION = re.compile(r"^(?!typedef|return)[A-Za-z_][\w \t\*\(\)]*?\b(\w+)\([^;]*?\)\s*\{", re.M)
# (bundle, tid, the sources defining the program's own functions)
CASES = [
    (TRACES / "basic", 5662, ["basic.c"]),
    (TRACES / "crash", 5707, ["crash.c"]),
    (TRACES / "threads", 5675, ["threads.c"]),
    (TRACES / "threads", 5677, ["threads.c"]),
    (HISTORY / "recursion", 15936, ["recursion.c"]),
    (HISTORY / "tailcall", 16326, ["tailcall.c"]),
    (HISTORY / "qsort_callback", 18211, ["qsort_callback.c"]),
    (HISTORY / "lines", 15966, ["lines.c"]),
    (HISTORY / "gradebook", 6289, ["gradebook.c"]),
    (HISTORY / "nodebug", 16183, ["nodebug.c", "nodebug_lib.c"]),
]
CASE_IDS = [f"{folder.name}-{tid}" for folder, tid, _ in CASES]


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
    shadow, locate = shadow_stack(folder, tid), gapless_thread(folder, tid).symbolizer.locate
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
    thread = gapless_thread(folder, tid)
    own = own_functions(folder, sources)
    whole = ground_truth_counts(folder, tid)
    made = profile(thread)
    assert made.instructions == whole.instructions == sum(row.exclusive for row in made.rows)
    rows = rows_by_name(made)
    for name in own & set(whole.exclusive):
        tail_calls = 6 if name == "tailcall`leaf" else 0  # entered by a jump: a call the ground truth does not count
        assert (rows[name].exclusive, rows[name].calls) == (whole.exclusive[name], whole.calls[name] + tail_calls)
    for first, last in slices(whole.instructions):
        made = profile(thread, "function", f"{first}:{last}")
        assert made.instructions == last - first + 1 == sum(row.exclusive for row in made.rows)
        assert_rows(made, *truth_rows(folder, tid, "function", first, last), own)


@pytest.mark.parametrize(("folder", "tid", "sources"), CASES, ids=CASE_IDS)
def test_line_rows_match_the_ground_truth(folder, tid, sources):
    thread = gapless_thread(folder, tid)
    count = thread.decoded.instruction_count
    for first, last in slices(count):
        made = profile(thread, "line", f"{first}:{last}")
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
    (HISTORY / "signal_handler", 14103),
    (HISTORY / "longjmp", 16223),
    (HISTORY / "contexts", 16366),
    (HISTORY / "exceptions", 18698),
]


@pytest.mark.parametrize("by", ["function", "line", "module"])
@pytest.mark.parametrize(("folder", "tid"), FOREST_CASES, ids=[f"{f.name}-{t}" for f, t in FOREST_CASES])
def test_rows_and_times_match_a_walk_of_every_item(folder, tid, by):
    thread = api.open_bundle(folder).thread(tid)
    count = thread.decoded.item_count
    for first, last in slices(count):
        made = profile(thread, by, f"{first}:{last}")
        expected = forest_rows(thread, by, first, last)
        if made.time_unit is None:
            expected = {name: values[:3] for name, values in expected.items()}
        got = {
            row.name: [row.calls, row.exclusive, row.inclusive]
            + ([row.exclusive_time, row.inclusive_time] if made.time_unit else [])
            for row in made.rows
        }
        assert got == expected
