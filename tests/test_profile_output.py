"""pt profile's times, table, JSON and errors, in the API, in LLDB and in Debian's lldb-22.

Whether the rows count what the programs ran is test_profile.py.
"""

import json
import re

import pytest
from support.committed_bundles import gapless_thread
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.paths import HISTORY, TRACES

from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.analysis.item_range import RangeError
from lldb_trace.profile import ProfileError, by_address, profile
from lldb_trace.views.profile import profile_json, profile_text


def test_times_add_up_and_are_absent_without_timing():
    timed = api.open_bundle(TRACES / "timestamps").thread(5683)
    times = ThreadTimes(timed.decoded, timed.process_trace.bundle.tsc_conversion)
    for by in ("function", "line", "module"):
        made = profile(timed, by, "100:6000")
        assert made.time_unit == "ns" and made.time == int(times.at([6001])[0] - times.at([100])[0]) > 0
        assert sum(row.inclusive_time > 0 for row in made.rows) > 1
        assert "times in ns" in profile_text(made, made.rows) and "exclusive ns  inclusive ns" in profile_text(
            made, made.rows
        )
        assert all("exclusiveTime" in row for row in json.loads(profile_json(made, made.rows, "time"))["rows"])
    untimed = gapless_thread(HISTORY / "recursion", 15936)
    made = profile(untimed, "line")
    assert made.time_unit is None and made.time is None
    assert all(row.exclusive_time is None and row.inclusive_time is None for row in made.rows)
    text = profile_text(made, made.rows)
    assert "no timing in this trace" in text and " ns" not in text and "ticks" not in text
    document = json.loads(profile_json(made, made.rows, "exclusive"))
    assert document["timeUnit"] is None and "time" not in document
    assert not any(key.endswith("Time") for row in document["rows"] for key in row)
    with pytest.raises(ProfileError, match=r"^cannot sort by time: the trace of thread 15936 has no timing$"):
        made.sorted_rows("time")


def test_the_table_and_json_of_the_recursion_program():
    thread = gapless_thread(HISTORY / "recursion", 15936)
    made = profile(thread)
    assert profile_text(made, made.rows[:2]).splitlines() == [
        "Profile of thread 15936 by function: items 0:346 (347 instructions), no timing in this trace",
        "calls  exclusive       %  inclusive       %  function",
        "   15        236   68.0%        236   68.0%  recursion`fib",
        "    8         98   28.2%         98   28.2%  recursion`fact",
        "   23        347  100.0%                     total (2 of 3 functions)",
        "... 1 more function: '-c 0' shows all",
    ]
    assert [row.name for row in made.sorted_rows("inclusive")] == ["recursion`main", "recursion`fib", "recursion`fact"]
    assert [row.name for row in made.sorted_rows("name")] == ["recursion`fact", "recursion`fib", "recursion`main"]
    lines = profile(thread, "line", "10:100")
    assert [row.name for row in lines.sorted_rows("name")][:3] == ["recursion.c:10", "recursion.c:11", "recursion.c:12"]
    document = json.loads(profile_json(lines, lines.rows[:1], "exclusive"))
    compiled_at = document["rows"][0].pop("file")  # the path DWARF names: where the program was built
    assert compiled_at.endswith("/test_traces/src/recursion.c")
    assert document == {
        "thread": 15936, "by": "line", "range": {"first": 10, "last": 100}, "instructions": 91, "calls": 7,
        "timeUnit": None, "sort": "exclusive", "rowCount": 7,
        "rows": [{
            "name": "recursion.c:13", "line": 13, "function": "recursion`fact",
            "calls": 6, "exclusive": 29, "exclusiveShare": 0.318681, "inclusive": 79, "inclusiveShare": 0.868132,
        }],
    }  # fmt: skip


def test_bad_input_is_one_line(tmp_path):
    thread = gapless_thread(HISTORY / "recursion", 15936)
    with pytest.raises(ProfileError, match=r"^unknown grouping 'file': choose function, line or module$"):
        profile(thread, "file")
    with pytest.raises(RangeError, match=r"^range 5:2 holds no items: the thread has items 0 to 346$"):
        profile(thread, "line", "5:2")
    with pytest.raises(RangeError, match=r"^bad range 'abc'"):
        profile(thread, "function", "abc")
    with pytest.raises(ProfileError, match=r"^unknown sort 'size'"):
        profile(thread).sorted_rows("size")
    document = json.loads((TRACES / "static" / "trace.json").read_text())
    process = document["processes"][0]
    for listed in process["threads"]:
        listed["iptTrace"] = str(TRACES / "static" / listed["iptTrace"])
    for module in process["modules"]:
        module["file"] = str(TRACES / "static" / module["file"])
    process["threads"].append({"tid": 99999})
    (tmp_path / "trace.json").write_text(json.dumps(document))
    traceless = api.open_bundle(tmp_path / "trace.json").thread(99999)
    with pytest.raises(ProfileError, match=r"^thread 99999 has no trace to profile$"):
        profile(traceless)


def test_pt_profile_in_lldb(session, tmp_path):
    assert session.handle("pt profile").GetError() == "error: no target: load a trace with 'trace load BUNDLE'\n"
    session.ok(f"trace load {HISTORY / 'recursion' / 'trace.json'}")
    thread = gapless_thread(HISTORY / "recursion", 15936)
    expected = profile(thread, "line", "10:100")
    shown = json.loads(session.ok("pt profile --by line --range 10:100 --json -c 0"))
    assert shown == json.loads(profile_json(expected, expected.rows, "exclusive"))
    text = session.ok("pt profile -c 2 --sort inclusive")
    assert text.splitlines()[:3] == [
        "Profile of thread 15936 by function: items 0:346 (347 instructions), no timing in this trace",
        "calls  exclusive       %  inclusive       %  function",
        "    0         13    3.7%        347  100.0%  recursion`main",
    ]
    assert "... 1 more function: '-c 0' shows all" in text
    assert "total (1 of 1 module)" in session.ok("pt profile -b mod -s name -t 15936")
    written = tmp_path / "profile.txt"
    wrote = session.ok(f"pt profile --by line --file {written}")
    assert wrote.strip() == f"wrote the profile of thread 15936 to {written}"
    assert written.read_text().startswith("Profile of thread 15936 by line:")
    errors = {
        "pt profile --by file": "unknown by 'file': choose function, line or module",
        "pt profile --range 5:2": "range 5:2 holds no items: the thread has items 0 to 346",
        "pt profile --range 12": "bad range '12': write FROM:TO with item indices, e.g. 1000:2000",
        "pt profile -s size": "unknown sort 'size': choose exclusive, inclusive, calls, name, time or inclusive-time",
        "pt profile -s time": "cannot sort by time: the trace of thread 15936 has no timing",
        "pt profile -t 7": "process 15936 has no traced thread 7 (its threads: 15936)",
        "pt profile -t 15936 -t 15936": "pt profile profiles one thread: give -t once",
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
    expected = profile(thread, "line", "100:6000")
    assert json.loads(written.read_text()) == json.loads(profile_json(expected, expected.rows, "exclusive"))


def test_counting_by_address_in_chunks_changes_nothing(monkeypatch):
    """Lines and modules are counted a chunk of items at a time (bounded memory); chunk edges cut blocks."""
    thread = api.open_bundle(TRACES / "cycles").threads[0]
    whole = {by: profile(thread, by, "7:8000") for by in ("line", "module")}
    monkeypatch.setattr(by_address, "CHUNK_ITEMS", 97)
    for by, expected in whole.items():
        chunked = profile(thread, by, "7:8000")
        assert [vars(row) for row in chunked.rows] == [vars(row) for row in expected.rows]
