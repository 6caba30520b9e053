"""The software recorder: every scenario decodes to its single-stepped ground truth.

Committed scenarios (test_traces/<name>) are checked as they are when this
machine has the same shared libraries; otherwise they are re-recorded from the
same recipe first, so the check always runs on real streams of real programs.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from support import reference_decode
from support.paths import TRACES
from support.reference_decode import check_exact, threads_of, truth_of
from support.trace_scripts import scenarios

from lldb_trace import libipt
from lldb_trace.capture.ptrace_recorder.recording import RecordError, RecordOptions, record
from lldb_trace.errors import LldbTraceError

COMMITTED = [s.name for s in scenarios.SCENARIOS if s.committed]


@pytest.fixture(scope="session")
def scenario_bundle(tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            committed = TRACES / name / "trace.json"
            if scenarios.BY_NAME[name].committed and scenarios.modules_match(committed):
                made[name] = committed
            else:
                made[name] = scenarios.make(scenarios.BY_NAME[name], tmp_path_factory.mktemp(name))
        return made[name]

    return get


@pytest.mark.parametrize("name", [n for n in COMMITTED if n != "missing-module"])
def test_scenario_decodes_to_ground_truth(scenario_bundle, name):
    checked = list(check_exact(scenario_bundle(name)))
    assert checked


def test_basic_covers_plt_libc_and_syscalls(scenario_bundle):
    bundle_path = scenario_bundle("basic")
    bundle = json.loads(bundle_path.read_text())
    names = [os.path.basename(m["systemPath"]) for m in bundle["processes"][0]["modules"]]
    assert "libc.so.6" in names and "basic" in names
    [(_tid, truth, items)] = list(check_exact(bundle_path))
    events = [event.type for event in reference_decode.events_of(items)]
    # Every syscall (write, getpid, exit_group...) disables tracing; each resumption re-enables it.
    assert events.count(libipt.EventType.DISABLED) >= 3
    assert events.count(libipt.EventType.ENABLED) == events.count(libipt.EventType.DISABLED)
    assert truth.ended == "exited"


def test_static_non_pie_with_rep_instructions(scenario_bundle):
    bundle_path = scenario_bundle("static")
    module = json.loads(bundle_path.read_text())["processes"][0]["modules"]
    assert len(module) == 1 and module[0]["loadAddress"] == "0x400000"
    [(_tid, _truth, items)] = list(check_exact(bundle_path))
    rep = [i.ip for i in items if isinstance(i, libipt.Insn) and i.raw[:1] == b"\xf3"]
    assert len(rep) == 2  # rep stosb and rep movsb, each reported once though they ran 16 times


def test_threads_have_their_own_streams(scenario_bundle):
    bundle_path = scenario_bundle("threads")
    assert len(threads_of(bundle_path)) == 4
    results = list(check_exact(bundle_path))
    main_items = results[0][2] if results[0][0] == min(threads_of(bundle_path)) else None
    assert all(truth.ended == "exited" for _, truth, _ in results)
    if main_items is not None:  # the caught SIGUSR1: an asynchronous disable, then the handler
        assert any(
            isinstance(i, tuple) and i[0] == "event" and i[1].type == libipt.EventType.DISABLED for i in main_items
        )


def test_timestamps_increase(scenario_bundle):
    bundle_path = scenario_bundle("timestamps")
    assert json.loads(bundle_path.read_text())["tscPerfZeroConversion"]["timeMult"] == 1
    [(_tid, _truth, items)] = list(check_exact(bundle_path))
    stamps = [event.tsc for event in reference_decode.events_of(items) if event.tsc]
    assert len(stamps) > 5 and stamps == sorted(stamps) and stamps[-1] > stamps[0]


def test_overflow_gap_is_exactly_where_it_was_injected(scenario_bundle):
    [(_tid, truth, items)] = list(check_exact(scenario_bundle("overflow")))
    [(start, end)] = truth.lost
    assert end - start >= 200
    overflows = [
        i[1] for i in items if isinstance(i, tuple) and i[0] == "event" and i[1].type == libipt.EventType.OVERFLOW
    ]
    assert len(overflows) == 1 and overflows[0].ip == truth.addresses[end]


def test_snapshot_starts_mid_stream(scenario_bundle):
    bundle_path = scenario_bundle("snapshot")
    [(_tid, truth, _items)] = list(check_exact(bundle_path))
    [thread] = json.loads(bundle_path.read_text())["processes"][0]["threads"]
    trace = (bundle_path.parent / thread["iptTrace"]).read_bytes()
    assert len(trace) == 1024 and not trace.startswith(bytes.fromhex("0282" * 8))
    assert 0 < truth.snapshot_from < len(truth.addresses)


def test_missing_module_gives_gaps_not_wrong_addresses(scenario_bundle):
    bundle_path = scenario_bundle("missing-module")
    [tid] = threads_of(bundle_path)
    truth = list(truth_of(bundle_path, tid).addresses)
    items = reference_decode.decode_thread(bundle_path, tid)
    errors = [item[1] for item in items if isinstance(item, tuple) and item[0] == "error"]
    assert errors and set(errors) <= {libipt.ErrorCode.NOMAP}
    decoded = reference_decode.segments_of(items)
    assert decoded, "the program's own code still decodes"
    position = 0
    for segment in decoded:  # every decoded run is a run of the truth, in order
        position = next(i for i in range(position, len(truth)) if truth[i : i + len(segment)] == segment)
        position += len(segment)


def test_crash_recording_is_partial_and_marked(scenario_bundle):
    bundle_path = scenario_bundle("crash")
    status = json.loads((bundle_path.parent / "recording.json").read_text())
    assert status["status"] == "crashed" and "SIGSEGV" in status["detail"]
    [(_tid, truth, items)] = list(check_exact(bundle_path))
    assert truth.ended.startswith("killed by SIGSEGV at ")
    fault = int(truth.ended.rsplit(" ", 1)[1], 16)
    # The faulting load never completed: tracing stops asynchronously right at it.
    disabled = reference_decode.events_of(items)[-1]
    assert disabled.type == libipt.EventType.ASYNC_DISABLED and disabled.at == fault
    assert truth.addresses[-1] != fault


@pytest.mark.slow
def test_a_million_instructions(scenario_bundle):
    [(_tid, truth, _items)] = list(check_exact(scenario_bundle("million")))
    assert len(truth.addresses) >= 1_000_000


def build(name, tmp_path):
    return str(scenarios.build(scenarios.BY_NAME[name], tmp_path))


def test_until_stops_at_the_symbol(tmp_path):
    recording = record(build("basic", tmp_path), [], RecordOptions(until="fib"))
    assert recording.status == "until"
    [flow] = recording.threads.values()
    assert flow.truth.ended == "reached fib"
    assert flow.current not in flow.truth.addresses  # fib's first instruction is where it stops, unrun


def test_until_never_reached_runs_to_the_end(tmp_path):
    recording = record(build("static", tmp_path), [], RecordOptions(from_start=True, until="fill_and_copy"))
    assert recording.status == "until"
    recording = record(build("crash", tmp_path), [], RecordOptions(until="main"))
    assert recording.status == "crashed"  # recording starts at main, so main is never reached again


@pytest.mark.parametrize(
    "program, message",
    [
        ("/nonexistent/program", "program not found: /nonexistent/program"),
        ("/etc", "/etc is not an executable file"),
        ("/etc/passwd", "/etc/passwd is not an executable file"),
    ],
)
def test_bad_programs(program, message):
    with pytest.raises(RecordError, match=message):
        record(program)


def test_a_name_without_a_slash_is_looked_for_in_path_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    with pytest.raises(RecordError, match=re.escape("program not found in PATH: here (give ./here for the one here)")):
        record("here")


def test_not_x86_64(tmp_path):
    binary = Path(build("crash", tmp_path))
    data = bytearray(binary.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    binary.write_bytes(data)
    with pytest.raises(LldbTraceError, match="is not an x86-64 program"):
        record(str(binary))


def test_no_such_symbol(tmp_path):
    with pytest.raises(RecordError, match="has no function symbol 'nosuch'"):
        record(build("crash", tmp_path), [], RecordOptions(until="nosuch"))


def test_no_main_needs_from_start(tmp_path):
    binary = tmp_path / "stripped"
    subprocess.run(["strip", "-o", str(binary), build("static", tmp_path)], check=True)
    with pytest.raises(RecordError, match="no 'main' symbol: record from process start with --from-start"):
        record(str(binary))


@pytest.mark.parametrize("name", [n for n in COMMITTED if n != "missing-module"])
def test_native_lldb_decodes_scenario_to_ground_truth(scenario_bundle, name):
    from support import native_lldb

    if not native_lldb.available():
        pytest.skip("Debian's lldb-22 with python3-lldb-22 is not installed (scripts/setup.sh test installs it)")
    bundle_path = scenario_bundle(name)
    decoded = native_lldb.decode_addresses(bundle_path)
    assert sorted(decoded) == sorted(threads_of(bundle_path))
    for tid, items in decoded.items():
        truth = truth_of(bundle_path, tid)
        runs, run = [], []
        for item in items:  # native reports gaps (e.g. "error: overflow") as items
            if isinstance(item, int):
                run.append(item)
            elif run:
                runs.append(run)
                run = []
        runs += [run] if run else []
        assert runs == truth.decodable_segments(), f"thread {tid}"
