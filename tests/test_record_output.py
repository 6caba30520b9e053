"""``lldb-trace record -o DIR``: what it writes, what it refuses, and what it never touches.

The recorder writes through the one bundle writer (bundle.saver), so its bundle is what ``trace save``
writes, plus its ground truth and recording.json.  It never deletes what it did not write, refuses a
folder that is not empty unless forced, and puts the bundle in place at once: a failed write leaves the
earlier bundle as it was.  A long recording shows its progress on a terminal, and Ctrl-C ends it with
the partial bundle.
"""

import errno
import io
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys

import pytest
from support.paths import SOURCES
from support.reference_decode import check_exact
from support.trace_scripts import scenarios

from lldb_trace import api, cli
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.capture.ptrace_recorder.progress_line import RecordingProgress


def record_cli(outdir, program, *options, stderr=subprocess.PIPE, args=()):
    return subprocess.run(
        [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(outdir), *options, "--", str(program), *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def static_program(tmp_path_factory):
    """A small program without libraries: recorded in a fraction of a second."""
    return scenarios.build(scenarios.BY_NAME["static"], tmp_path_factory.mktemp("static"))


def contents(folder):
    """Every file under ``folder``: {relative path: bytes}."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_with_other_files_is_refused_and_its_files_are_never_deleted(tmp_path, static_program):
    folder = tmp_path / "project"
    mine = {"modules/mine.c": b"int x;\n", "traces/notes.txt": b"notes\n", "ground_truth/a.txt": b"a\n", "README": b"r"}
    for name, data in mine.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    refused = record_cli(folder, static_program, "--from-start")
    assert refused.returncode == 1 and refused.stdout == ""  # refused before recording anything
    assert refused.stderr == f"error: {folder} is not empty: give a new or empty folder, or add --force to add to it\n"
    assert contents(folder) == mine
    forced = record_cli(folder, static_program, "--from-start", "--force")
    assert forced.returncode == 0, forced.stderr
    after = contents(folder)
    assert {name: after[name] for name in mine} == mine  # kept, beside the bundle
    assert "trace.json" in after and "recording.json" in after
    empty = record_cli("", static_program, "--from-start", "--force")  # '' is no name for the current folder
    assert empty.stderr == "error: the path is empty: give the path of the recording (a new or empty folder)\n"


def test_an_earlier_bundle_is_refused_and_replaced_whole_only_with_force(tmp_path, static_program):
    folder = tmp_path / "bundle"
    assert record_cli(folder, static_program, "--from-start").returncode == 0
    first = contents(folder)
    refused = record_cli(folder, static_program, "--from-start")
    assert refused.returncode == 1
    assert refused.stderr == f"error: {folder} already holds a bundle (trace.json): add --force to replace it\n"
    assert contents(folder) == first
    assert record_cli(folder, static_program, "--from-start", "--force").returncode == 0
    second = contents(folder)
    listed = json.loads(second["recording.json"])["files"]
    assert sorted(second) == listed  # only the new recording: the first one's thread files are gone
    assert second["trace.json"] != first["trace.json"]  # another pid
    assert not [p for p in tmp_path.iterdir() if p.name != "bundle"]  # no staging folder left


def test_a_recording_that_cannot_be_written_leaves_the_earlier_bundle_as_it_was(
    tmp_path, static_program, monkeypatch, capsys
):
    folder = tmp_path / "bundle"
    assert cli.main(["record", "-o", str(folder), "--from-start", "--", str(static_program)]) == 0
    before = contents(folder)

    def disk_full(_truth, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(GroundTruth, "write", disk_full)
    capsys.readouterr()
    assert cli.main(["record", "-o", str(folder), "--from-start", "--force", "--", str(static_program)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: cannot write {folder}/ground_truth/") and "No space left on device" in error
    assert contents(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]


def test_the_recorder_writes_the_bundle_trace_save_writes(tmp_path, static_program):
    """One writer: trace files named as trace save names them, the program copied as --copy-images copies it."""
    assert record_cli(tmp_path / "b", static_program, "--from-start", "--copy-program").returncode == 0
    document = json.loads((tmp_path / "b" / "trace.json").read_text())
    [thread] = document["processes"][0]["threads"]
    assert thread == {
        "tid": thread["tid"],
        "iptTrace": f"traces/{thread['tid']}.intelpt_trace",
        "stopReason": {"exited": True, "exitStatus": 75},  # main's result, given to exit
        "syscallResults": f"syscalls/{thread['tid']}.json",
        "registerStates": f"registers/{thread['tid']}.npz",
    }
    module, vdso = document["processes"][0]["modules"]
    assert vdso == {"systemPath": "[vdso]", "loadAddress": vdso["loadAddress"], "file": "modules/[vdso]"}  # stepped
    copy = "modules/" + str(static_program).lstrip("/")
    assert module["file"] == copy and (tmp_path / "b" / copy).read_bytes() == static_program.read_bytes()
    copied = json.loads((tmp_path / "b" / "copied_images.json").read_text())
    assert copied == {str(static_program): copy, "[vdso]": "modules/[vdso]"}
    assert list(check_exact(tmp_path / "b" / "trace.json"))


@pytest.fixture(scope="module")
def endless(tmp_path_factory):
    binary = tmp_path_factory.mktemp("endless") / "endless"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "endless.c")], check=True)
    return binary


def test_a_long_recording_shows_progress_on_a_terminal_and_ctrl_c_keeps_the_bundle(tmp_path, endless):
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "b"), "--", str(endless)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown = b""
    try:
        while b" instructions in " not in shown:  # the program never ends: wait for the first progress line
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, f"no progress shown: {shown!r}"
            shown += os.read(master, 4096)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        while select.select([master], [], [], 0)[0]:
            try:
                shown += os.read(master, 4096)
            except OSError:  # the terminal's last writer is gone
                break
    finally:
        proc.kill()
        os.close(master)
    assert proc.returncode == 0
    assert shown.startswith(b"\rrecording: ") and b"\r\x1b[K" in shown  # rewritten in place, then erased
    assert b"interrupted: the recording is partial (stopped by the user)" in shown
    assert out.endswith(f"wrote {tmp_path / 'b' / 'trace.json'}\n")
    assert json.loads((tmp_path / "b" / "recording.json").read_text())["status"] == "interrupted"
    [(_tid, truth, _items)] = list(check_exact(tmp_path / "b" / "trace.json"))
    assert truth.ended == "interrupted"


def test_ctrl_c_replaces_an_earlier_bundle_with_the_partial_one_at_once(tmp_path, endless, static_program):
    """The program itself sends the SIGINT to the recorder, after a fixed number of its own rounds."""
    assert record_cli(tmp_path / "b", static_program, "--from-start").returncode == 0
    result = record_cli(tmp_path / "b", endless, "--force", args=["1000"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == "interrupted: the recording is partial (stopped by the user)\n"  # no terminal: no progress
    status = json.loads((tmp_path / "b" / "recording.json").read_text())
    assert status["status"] == "interrupted" and status["program"] == str(endless)
    assert sorted(contents(tmp_path / "b")) == status["files"]
    [(_tid, truth, _items)] = list(check_exact(tmp_path / "b" / "trace.json"))
    assert len(truth.addresses) > 1000 * 4  # each round runs several instructions


def test_sigterm_ends_a_recording_as_ctrl_c_does_and_leaves_no_temporary_files(tmp_path, endless, monkeypatch):
    """``timeout`` sends SIGTERM: it killed the recorder, which left its start core in TMPDIR and no bundle."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = record_cli(tmp_path / "b", endless, args=["1000", str(int(signal.SIGTERM))])
    assert result.returncode == 0, result.stderr
    assert result.stderr == "interrupted: the recording is partial (stopped by SIGTERM)\n"
    assert json.loads((tmp_path / "b" / "recording.json").read_text())["status"] == "interrupted"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_sigterm_while_the_bundle_is_written_waits_for_it(tmp_path, static_program, monkeypatch):
    """Once the run has ended, SIGTERM (``timeout``) and SIGHUP wait until the bundle is written: they killed the
    recorder while it wrote, leaving no bundle and no message."""
    from lldb_trace.capture.ptrace_recorder import bundle_writer

    writing = bundle_writer.write_bundle

    def signalled_first(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGHUP)
        return writing(*args, **kwargs)

    monkeypatch.setattr(bundle_writer, "write_bundle", signalled_first)
    assert cli.main(["record", "-o", str(tmp_path / "b"), "--", str(static_program)]) == 0
    assert (tmp_path / "b" / "trace.json").exists() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_killed_recorder_leaves_no_temporary_files(tmp_path, endless, monkeypatch):
    """SIGKILL cannot be caught: the start core, written before the program ran, is an unlinked file."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = record_cli(tmp_path / "b", endless, args=["1000", str(int(signal.SIGKILL))])
    assert result.returncode == -signal.SIGKILL
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "b").exists()


class FakeStream(io.StringIO):
    def __init__(self, terminal):
        super().__init__()
        self.terminal = terminal

    def isatty(self):
        return self.terminal


def test_progress_is_a_line_rewritten_on_a_terminal_and_a_line_per_half_minute_in_a_log():
    now = [100.0]
    terminal, log = FakeStream(True), FakeStream(False)
    shows = [RecordingProgress(terminal, lambda: now[0]), RecordingProgress(log, lambda: now[0])]
    for seconds, count in [(0.5, 10), (1.0, 20), (1.1, 30), (1.3, 40), (30.0, 50), (45.0, 60), (60.0, 70)]:
        now[0] = 100.0 + seconds
        for show in shows:
            show(count)
    for show in shows:
        show.clear()
    tail = " (Ctrl-C ends it, keeping them)"
    assert (
        terminal.getvalue()
        == "".join(
            f"\rrecording: {count} instructions in {seconds} s{tail}\x1b[K"
            for count, seconds in [(20, 1), (40, 1), (50, 30), (60, 45), (70, 60)]
        )
        + "\r\x1b[K"
    )
    assert log.getvalue() == f"recording: 50 instructions in 30 s{tail}\nrecording: 70 instructions in 60 s{tail}\n"


def test_code_run_in_the_vdso_is_recorded_and_decodes(tmp_path):
    """clock_gettime runs in the vdso, which has no file: the recorder writes the kernel's image under modules/,
    named by the JSON bundle and by the perf.data, so every instruction stepped decodes, in libipt and in perf's
    own decoder.  (Decoding stopped at the vdso before: 740 of clock.c's 2,133 instructions.)"""
    binary = tmp_path / "clock"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "clock.c")], check=True)
    assert record_cli(tmp_path / "json", binary).returncode == 0
    ((_, truth, _),) = list(check_exact(tmp_path / "json" / "trace.json"))  # the stepped addresses, no gap
    modules = json.loads((tmp_path / "json" / "trace.json").read_text())["processes"][0]["modules"]
    (vdso,) = [module for module in modules if module["systemPath"] == "[vdso]"]
    low, size = int(vdso["loadAddress"], 16), (tmp_path / "json" / vdso["file"]).stat().st_size
    assert any(low <= address < low + size for address in truth.addresses)
    assert record_cli(tmp_path / "perf", binary, "--format", "perf").returncode == 0
    decoded = api.open_bundle(tmp_path / "perf" / "perf.data").threads[0].decoded
    recorded = json.loads((tmp_path / "perf" / "recording.json").read_text())["instructions"]
    assert not decoded.gaps and decoded.item_count == sum(recorded.values())
    if shutil.which("perf"):
        script = ["perf", "script", "-i", str(tmp_path / "perf" / "perf.data"), "--itrace=i0ns", "-F", "ip,sym"]
        shown = subprocess.run(script, capture_output=True, text=True, timeout=300).stdout
        assert len(shown.splitlines()) == decoded.item_count and "__vdso_clock_gettime" in shown


def test_a_call_the_kernel_runs_again_after_an_ignored_signal(tmp_path):
    """restarted_read.c blocks in a read that two SIGWINCH (no handler) interrupt before a child writes the data:
    each stops the traced thread with rax -ERESTARTSYS, which the recorder kept as the read's result (and as the
    registers after it, and the buffer as it was before); the kernel ran the read again.  Now what it kept is
    what the read returned: 8, and the child's bytes."""
    binary = tmp_path / "restarted_read"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "restarted_read.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "rec"), "--", str(binary)]
    subprocess.run(command, capture_output=True, timeout=300, check=True)
    (thread,) = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    (read,) = [
        item.index
        for item in thread.items()
        if item.disassembly.startswith("syscall") and thread.registers_at(item.index)["rdx"] == 8
        and thread.registers_at(item.index)["rax"] == 0
    ]  # fmt: skip
    buffer = thread.registers_at(read)["rsi"]
    assert thread.registers_at(read + 1)["rax"] == 8
    assert thread.read_memory_at(read + 1, buffer, 8) == (b"CHILDDAT", b"\xff" * 8)
