"""A traced program that creates processes: each child runs untraced, and every place a trace is shown names it.

test_traces/src/forks.c creates a child by fork(), vfork() and clone() without CLONE_THREAD (with "early",
by fork() in a constructor, before main, too), reaps each, prints its pid, and exits with 3 only if every
child exited with the status it should: so the exit status says the children ran unharmed, and the
printed pids are the independent reference for the pids the recorders report.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SOURCES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support import native_lldb  # noqa: E402
from support.launching import launchable  # noqa: E402
from support.lldb22 import needs_lldb_22, run_lldb_22  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace import cli  # noqa: E402
from lldb_trace.bundle.model import CpuInfo, ThreadStop  # noqa: E402
from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.capture.ptrace_recorder.recording import record  # noqa: E402
from lldb_trace.debugger import live_session as live  # noqa: E402

SOURCE = SOURCES / "forks.c"
LLDB_TRACE = Path(sys.executable).parent / "lldb-trace"


@pytest.fixture(scope="module")
def forks(tmp_path_factory):
    binary = tmp_path_factory.mktemp("build") / "forks"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(binary), str(SOURCE)], check=True)
    return binary


def printed_children(text):
    return [int(pid) for pid in re.findall(r"^child (\d+)$", text, re.M)]


@pytest.mark.parametrize("args", [[], ["exec"], ["early"]], ids=["fork-vfork-clone", "exec", "before-main"])
def test_the_recorder_lets_each_child_run_untraced_and_names_it(forks, args, capfd):
    recording = record(str(forks), args)
    printed = printed_children(capfd.readouterr().out)
    assert len(printed) == (4 if args == ["early"] else 3)
    assert (recording.status, recording.detail) == ("exited", "exit code 3")  # every child exited as it should
    assert recording.untraced_children == printed
    assert list(recording.threads) == [recording.pid]
    assert recording.stops == {recording.pid: ThreadStop.exit(3)}


@pytest.fixture(scope="module")
def recorded(forks, tmp_path_factory):
    """``lldb-trace record`` of forks: (its folder, its stderr, the children's pids the program printed)."""
    out = tmp_path_factory.mktemp("recorded") / "out"
    done = subprocess.run([LLDB_TRACE, "record", "-o", out, "--", forks], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out, done.stderr, printed_children(done.stdout)


def test_lldb_trace_record_says_so_everywhere_and_the_bundle_loads(recorded, tmp_path, capsys):
    out, stderr, children = recorded
    listed = ", ".join(map(str, children))
    assert f"created 3 process(es) that ran untraced: {listed} (the recorder follows only" in stderr
    assert json.loads((out / "recording.json").read_text())["untracedChildren"] == children
    [process] = json.loads((out / "trace.json").read_text())["processes"]
    assert process["untracedChildren"] == children
    assert process["threads"][0]["stopReason"] == {"exited": True, "exitStatus": 3}
    assert cli.main(["dump", str(out)]) == 0
    info = capsys.readouterr().out
    assert f"  Untraced children: {listed} (processes it created" in info
    assert "      stop reason: exited with status 3\n" in info
    assert cli.main(["dump", "-j", str(out)]) == 0
    info_json = json.loads(capsys.readouterr().out)
    assert info_json["process"]["untracedChildren"] == children
    exited = {"exited": True, "exitStatus": 3, "description": "exited with status 3"}
    assert info_json["threads"][0]["stopReason"] == exited

    session = Session(tmp_path)
    try:
        session.ok(f"trace load {out}")
        thread = session.target.GetProcess().GetSelectedThread()
        assert thread.GetStopDescription(256) == "exited with status 3"
        assert session.target.GetProcess().GetState() == lldb.eStateStopped
        assert f"Untraced children: {listed}" in session.ok("pt dump")
    finally:
        session.close()


@needs_lldb_22
def test_lldb_22_shows_the_exit_and_the_children_and_still_decodes_the_bundle_natively(recorded, tmp_path):
    out, _, children = recorded
    shown = run_lldb_22(tmp_path, [f"trace load {out}", "thread list", "pt dump"])
    assert shown.returncode == 0, shown.stderr
    assert "stop reason = exited with status 3" in shown.stdout
    assert f"Untraced children: {', '.join(map(str, children))}" in shown.stdout
    if native_lldb.available():  # its own intel-pt plugin reads a bundle with the new keys
        [truth] = (out / "ground_truth").glob("*.txt")
        decoded = native_lldb.decode_addresses(out / "trace.json")
        assert decoded == {int(truth.stem): list(GroundTruth.read(truth).addresses)}


def test_pt_start_software_notes_each_child_and_trace_save_keeps_them(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "KEEP_ADDRESSES", True)  # to compare the decoded trace with what was recorded
    binary = launchable(tmp_path, monkeypatch, SOURCE.name, "-O0", directory=tmp_path / "build")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main", output=tmp_path / "stdout.txt")
        session.ok("pt start --backend software")
        session.ok("breakpoint set -n finished")
        session.handle("continue")
        assert session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetFunctionName() == "finished"
        live_session = live.session_for(session.target)
        [tid] = live_session.tids
        decoded = [item.address for item in live_session.trace.cursor(tid, forwards=True).items()]
        assert decoded == list(live_session.backend.recorders[tid].truth.addresses)  # exact across each creation
        children = printed_children((tmp_path / "stdout.txt").read_text())
        listed = ", ".join(map(str, children))
        assert f"note: the process created 3 process(es) that ran untraced: {listed}\n" in session.streams()[0]
        assert f"  Untraced children: {listed} (processes it created" in session.ok("pt dump")
        session.ok(f"trace save {tmp_path / 'saved'}")
        session.target.GetProcess().Kill()
    finally:
        session.close()
    assert json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]["untracedChildren"] == children


@needs_lldb_22
def test_pt_start_software_notes_each_child_in_lldb_22(forks, tmp_path):
    output = tmp_path / "stdout.txt"
    commands = [f"file {forks}", "breakpoint set -n main", f"process launch -o {output}"]
    commands += ["pt start --backend software", "breakpoint set -n finished", "continue", "pt dump"]
    done = run_lldb_22(tmp_path, commands)
    listed = ", ".join(map(str, printed_children(output.read_text())))
    assert f"note: the process created 3 process(es) that ran untraced: {listed}" in done.stdout, done.stderr
    assert f"Untraced children: {listed}" in done.stdout


class _Unrecorded:
    """Stands in for IntelPtBackend (no PMU here): the stop hook's other work, reading buffers, is not tested here."""

    name = "intel-pt"
    cpu = CpuInfo("intel", 6, 106, 6)
    all_threads = drives_stepping = False

    def read_all(self):
        pass

    def trace_bytes(self, _tid):
        return None

    def generation(self, _tid):
        return 0

    def close(self):
        pass


def test_an_intel_pt_session_notes_the_children_alive_at_a_stop(tmp_path, monkeypatch):
    """Intel PT traces each thread without inherit: a child is untraced; the stop hook sees it in /proc."""
    binary = launchable(tmp_path, monkeypatch, SOURCE.name, "-O0", directory=tmp_path / "build")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n reaped", output=tmp_path / "stdout.txt")  # the fork child, not reaped yet
        child = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).FindVariable("pid")
        tid = session.target.GetProcess().GetSelectedThread().GetThreadID()
        live_session = live.LiveSession(session.target, _Unrecorded(), [tid])
        live_session.stopped()
        assert live_session.untraced_children == [child.GetValueAsSigned()]
        assert live.session_for(session.target).trace.process.untraced_children == (child.GetValueAsSigned(),)
        live_session.close()
        session.target.GetProcess().Kill()
    finally:
        session.close()
