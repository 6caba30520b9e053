"""How a thread stopped survives perf.data, and a trace that does not say shows "end of trace", not a signal.

A crash or an exit recorded once is written both as a JSON bundle and as perf.data; both must load with the
same stop.  Linux perf 6.1 must read the perf.data exactly as it reads the same file without lldb_trace's
stop section.  A perf.data with no such section (as ``perf record`` writes) claims no signal: its threads
show "end of trace", or "exited" where a PERF_RECORD_EXIT says the task ended.
"""

import json
import shutil
import subprocess

import pytest
from support.paths import SOURCES, TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb22 import needs_lldb_22, run_lldb_22  # noqa: E402
from support.lldb_session import Session  # noqa: E402
from support.trace_scripts import cases, scenarios  # noqa: E402

from lldb_trace.bundle.loader import BundleError  # noqa: E402
from lldb_trace.bundle.model import ThreadStop  # noqa: E402
from lldb_trace.bundle.schemas import render_schema  # noqa: E402
from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.capture.ptrace_recorder.bundle_writer import write_bundle  # noqa: E402
from lldb_trace.capture.ptrace_recorder.recording import record  # noqa: E402
from lldb_trace.perf_data import writer  # noqa: E402
from lldb_trace.perf_data.reader import PerfDataError  # noqa: E402
from lldb_trace.trace_files import load_trace  # noqa: E402

CRASH = TRACES / "crash"
SEGV = "signal SIGSEGV: address not mapped to object (fault address=0x0)"
needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="Linux perf is not installed")


def built(source, folder):
    binary = folder / source.removesuffix(".c")
    subprocess.run(["gcc", "-g", "-O0", "-o", str(binary), str(SOURCES / source)], check=True)
    return binary


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``{name: (Recording, JSON bundle folder, perf.data)}`` of a crash and of forks (an exit, children)."""
    found = {}
    for name, source in [("crash", "crash.c"), ("forks", "forks.c")]:
        folder = tmp_path_factory.mktemp(name)
        recording = record(str(built(source, folder)))
        write_bundle(recording, folder / "json")
        write_bundle(recording, folder / "perf", file_format="perf")
        found[name] = recording, folder / "json", folder / "perf" / "perf.data"
    return found


def test_a_recorded_crash_loads_from_perf_data_as_from_its_bundle(recorded):
    recording, bundle, perf_data = recorded["crash"]
    [tid] = recording.threads
    [from_bundle] = load_trace(bundle).processes[0].threads
    [from_perf] = load_trace(perf_data).processes[0].threads
    assert from_perf.stop == from_bundle.stop == recording.stops[tid]
    assert (from_perf.stop.signal, from_perf.stop.description) == (11, SEGV)


def test_an_exit_and_the_untraced_children_load_from_perf_data(recorded):
    recording, bundle, perf_data = recorded["forks"]
    for path in (bundle, perf_data):
        [process] = load_trace(path).processes
        assert [thread.stop for thread in process.threads] == [ThreadStop.exit(3)]
        assert process.untraced_children == tuple(recording.untraced_children)
        assert len(process.untraced_children) == 3


def perf_run(*args):
    return subprocess.run(["perf", *args], capture_output=True, text=True, timeout=120)


def without_tip(report):
    """perf report's output without the tip it picks at random for its last lines ("# (Tip: ...)")."""
    return "\n".join(line for line in report.splitlines() if not line.startswith("# (Tip:"))


@needs_perf
@pytest.mark.parametrize("name", ["crash", "forks"])
def test_linux_perf_reads_the_file_as_if_lldb_traces_section_were_not_there(recorded, name, tmp_path, monkeypatch):
    recording, bundle, perf_data = recorded[name]
    [tid] = recording.threads
    truth = GroundTruth.read(bundle / "ground_truth" / f"{tid}.txt")
    assert cases.perf_script(perf_data) == {tid: list(truth.addresses)}
    monkeypatch.setattr(writer, "pack_stop_section", lambda _process: None)
    write_bundle(recording, tmp_path / "plain", file_format="perf")
    plain = tmp_path / "plain" / "perf.data"
    assert plain.stat().st_size < perf_data.stat().st_size
    for args in (["script", "--itrace=i0nsZ", "-F", "tid,ip", "--show-task-events"], ["report", "--stdio"]):
        ours, theirs = perf_run(*args, "-f", "-i", str(perf_data)), perf_run(*args, "-f", "-i", str(plain))
        assert (ours.returncode, without_tip(ours.stdout), ours.stderr) == (
            theirs.returncode,
            without_tip(theirs.stdout),
            theirs.stderr,
        )
    header = perf_run("report", "--header-only", "-f", "-i", str(perf_data))
    assert header.returncode == 0 and "# cpuid : GenuineIntel,6,85,4" in header.stdout
    events = perf_run("script", "--show-task-events", "-F", "pid,tid", "-f", "-i", str(perf_data)).stdout
    exited = f"PERF_RECORD_EXIT({recording.pid}:{tid})" in events
    assert exited == (name == "forks")  # the kernel's record of a task that ended; a crash held by LLDB did not


def loaded_stop(folder, path):
    """(signal number, description, pc) of the selected thread after ``trace load path``, and ``pt dump``."""
    folder.mkdir()
    session = Session(folder)
    try:
        session.ok(f"trace load {path}")
        process = session.target.GetProcess()
        thread = process.GetSelectedThread()
        assert process.GetState() == lldb.eStateStopped and thread.GetStopReason() == lldb.eStopReasonSignal
        stop = thread.GetStopReasonDataAtIndex(0), thread.GetStopDescription(256), thread.GetFrameAtIndex(0).GetPC()
        return stop, session.ok("pt dump")
    finally:
        session.close()


def test_trace_save_format_perf_keeps_the_committed_crash(tmp_path):
    if not scenarios.modules_match(CRASH / "trace.json"):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    session = Session(tmp_path)
    try:
        session.ok(f"trace load {CRASH}")
        session.ok(f"trace save --format perf {tmp_path / 'crash.data'}")
    finally:
        session.close()
    from_bundle = loaded_stop(tmp_path / "bundle", CRASH)
    from_perf = loaded_stop(tmp_path / "perf", tmp_path / "crash.data")
    assert from_perf[0] == from_bundle[0] == (11, SEGV, 0x40113E)
    assert f"stop reason: {SEGV} at 0x40113e" in from_perf[1]


@needs_lldb_22
def test_lldb_22_saves_and_loads_the_crash_as_perf_data(tmp_path):
    if not scenarios.modules_match(CRASH / "trace.json"):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    saved = tmp_path / "crash.data"
    commands = [f"trace load {CRASH}", f"trace save --format perf {saved}", "target delete --all"]
    done = run_lldb_22(tmp_path, [*commands, f"trace load {saved}", "thread list"])
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("thread list", 1)[1]
    assert (
        f"tid = 5707, 0x000000000040113e crash`descend(n=<unavailable>) at crash.c:8:12, stop reason = {SEGV}" in listed
    )


def test_a_trace_that_does_not_say_how_it_stopped_shows_end_of_trace(tmp_path):
    if not scenarios.modules_match(TRACES / "basic" / "trace.json"):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    perf_data = cases.make("basic", tmp_path)  # as perf record writes it: no stop section, no EXIT record
    for name, path in [("bundle", TRACES / "basic"), ("perf", perf_data)]:
        (signal, description, _pc), info = loaded_stop(tmp_path / name, path)
        assert (signal, description) == (19, "end of trace")  # LLDB's SIGSTOP: held, not resumed; no signal claimed
        assert "stop reason" not in info


@needs_lldb_22
def test_lldb_22_shows_end_of_trace_and_the_exit(recorded, tmp_path):
    if not scenarios.modules_match(TRACES / "basic" / "trace.json"):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    perf_data = cases.make("basic", tmp_path)
    done = run_lldb_22(tmp_path, [f"trace load {perf_data}", f"trace load {recorded['forks'][2]}", "thread list"])
    assert done.returncode == 0, done.stderr
    assert "stop reason = end of trace" in done.stdout
    assert "stop reason = exited with status 3" in done.stdout


def test_a_perf_record_exit_without_lldb_traces_section_reads_exited(recorded, tmp_path, monkeypatch):
    recording = recorded["forks"][0]
    monkeypatch.setattr(writer, "pack_stop_section", lambda _process: None)
    write_bundle(recording, tmp_path / "plain", file_format="perf")
    [process] = load_trace(tmp_path / "plain" / "perf.data").processes
    assert [thread.stop for thread in process.threads] == [ThreadStop.exit()]  # perf gives no status
    assert ThreadStop.exit().text == "exited" and process.untraced_children == ()


def _rewritten(perf_data, folder, old, new):
    data = perf_data.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    path = folder / f"{len(list(folder.iterdir()))}.data"
    path.write_bytes(data.replace(old, new))
    return path


def test_a_damaged_section_is_one_line_and_another_tools_is_left_alone(recorded, tmp_path):
    perf_data = recorded["forks"][2]
    damaged = _rewritten(perf_data, tmp_path, b'"exited":true', b'"exited":null')
    with pytest.raises(PerfDataError, match=r"stop section is damaged: processes\[0\]\.threads\[0\]\.stopReason"):
        load_trace(damaged)
    with pytest.raises(PerfDataError, match=r"stop section is damaged: not JSON"):
        load_trace(_rewritten(perf_data, tmp_path, b'"exited":true', b'"exited":tru"'))
    foreign = _rewritten(perf_data, tmp_path, b"lldb_trace stops", b"other tool stops")
    [process] = load_trace(foreign).processes
    assert [thread.stop for thread in process.threads] == [ThreadStop.exit()]  # its EXIT record still counts


@pytest.mark.parametrize(
    ("stop", "message"),
    [
        ({}, "stopReason: expected exactly one of 'signal' or 'exited', got neither"),
        ({"signal": 11, "exited": True}, "stopReason: expected exactly one of 'signal' or 'exited', got both"),
        ({"signal": 11, "exitStatus": 0}, "stopReason.exitStatus: needs exited as well"),
        ({"exited": True, "exitStatus": 256}, "stopReason.exitStatus: expected a value <= 255, got 256"),
    ],
)
def test_a_bad_stop_reason_is_one_line_naming_it(tmp_path, stop, message):
    document = json.loads((CRASH / "trace.json").read_text())
    document["processes"][0]["threads"][0]["stopReason"] = stop
    (tmp_path / "trace.json").write_text(json.dumps(document))
    with pytest.raises(BundleError, match=rf": processes\[0\]\.threads\[0\]\.{message}"):
        load_trace(tmp_path / "trace.json")


def test_trace_schema_shows_the_new_keys():
    for name in ("intel-pt", "intel-pt-lldb"):
        lines = render_schema(name).splitlines()
        assert any(line.strip().startswith('"exited"?: true,') for line in lines)
        assert any(line.strip().startswith('"exitStatus"?: integer') for line in lines)
        assert any(line.strip() == '"untracedChildren"?: [' for line in lines)
        assert any(line.startswith('// - "untracedChildren": lldb_trace extension') for line in lines)
