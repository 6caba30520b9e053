"""A trace that ends in a fatal signal keeps it: after ``trace load`` the thread stops as live LLDB showed it.

Each program dies of a real signal.  Live LLDB runs it once (the reference: signal, description, pc); the
recorder (and the live software recorder, through ``trace save``) records it; the loaded bundle must
show the same stop, in the pip LLDB and in Debian's lldb-22, which must still decode the bundle natively.
"""

import json
import shutil

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.committed_bundles import loadable  # noqa: E402
from support.launching import launchable  # noqa: E402
from support.lldb_batch import LOAD_PLUGIN, lldb_batch  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.capture.ptrace_recorder.bundle_writer import write_bundle  # noqa: E402
from lldb_trace.capture.ptrace_recorder.recording import record  # noqa: E402

CASES = {  # name: (source, program arguments, signal)
    "segv": ("crash.c", [], 11),
    "abort": ("fatal.c", ["abort"], 6),  # raised by a system call: the thread stands after it
    "divide": ("fatal.c", ["divide"], 8),
    "ud2": ("fatal.c", ["ud2"], 4),
}


def stop_of(thread):
    return thread.GetStopReasonDataAtIndex(0), thread.GetStopDescription(256), thread.GetFrameAtIndex(0).GetPC()


def live_stop(folder, binary, args):
    """(signal, description, pc) of the thread live LLDB shows stopped by the signal."""
    folder.mkdir()
    session = Session(folder)
    try:
        session.ok(f"file {binary}")
        session.ok(f"process launch -o {folder / 'stdout.txt'} -- {' '.join(args)}")
        thread = session.target.GetProcess().GetSelectedThread()
        assert thread.GetStopReason() == lldb.eStopReasonSignal
        stop = stop_of(thread)
        session.target.GetProcess().Kill()
        return stop
    finally:
        session.close()


def loaded_stop(folder, bundle):
    """(signal, description, pc) of the loaded bundle's selected thread, and ``trace dump``'s text."""
    folder.mkdir()
    session = Session(folder)
    try:
        session.ok(f"trace load {bundle}")
        thread = session.target.GetProcess().GetSelectedThread()
        assert thread.GetStopReason() == lldb.eStopReasonSignal
        return stop_of(thread), session.ok("pt dump")
    finally:
        session.close()


@pytest.mark.parametrize("case", CASES)
def test_a_recorded_fatal_signal_loads_as_the_stop_live_lldb_shows(case, tmp_path, monkeypatch):
    source, args, number = CASES[case]
    binary = launchable(tmp_path, monkeypatch, source, "-O0", directory=tmp_path / "build")
    recording = record(str(binary), args)
    assert recording.status == "crashed"
    write_bundle(recording, tmp_path / "bundle")
    [thread] = json.loads((tmp_path / "bundle" / "trace.json").read_text())["processes"][0]["threads"]
    assert thread["stopReason"]["signal"] == number
    live = live_stop(tmp_path / "live", binary, args)
    loaded, info = loaded_stop(tmp_path / "loaded", tmp_path / "bundle")
    assert loaded == live
    ended = GroundTruth.read(tmp_path / "bundle" / "ground_truth" / f"{thread['tid']}.txt").ended
    assert ended.endswith(f" at {live[2]:#x}")  # where the recorder saw the thread stand
    assert f"stop reason: {live[1]} at {live[2]:#x}" in info


def test_the_committed_crash_loads_stopped_by_its_sigsegv(tmp_path):
    folder = TRACES / "crash"
    loadable(folder)
    (signal, description, pc), _info = loaded_stop(tmp_path / "loaded", folder / "trace.json")
    assert (signal, pc) == (11, 0x40113E)
    assert description == "signal SIGSEGV: address not mapped to object (fault address=0x0)"


@pytest.mark.parametrize("case", ["segv", "abort"])
def test_a_live_trace_saved_at_a_fatal_signal_keeps_it(case, tmp_path, monkeypatch):
    source, args, number = CASES[case]
    binary = launchable(tmp_path, monkeypatch, source, "-O0", directory=tmp_path / "build")
    (tmp_path / "live").mkdir()
    session = Session(tmp_path / "live")
    try:
        session.ok(f"file {binary}")
        session.ok("breakpoint set -n main")
        session.ok(f"process launch -o {tmp_path / 'stdout.txt'} -- {' '.join(args)}")
        session.ok("pt start --backend software")
        session.handle("continue")
        live = stop_of(session.target.GetProcess().GetSelectedThread())
        assert live[0] == number
        session.ok(f"trace save {tmp_path / 'saved'}")
        session.target.GetProcess().Kill()
    finally:
        session.close()
    [thread] = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]["threads"]
    assert thread["stopReason"] == {"signal": number, "description": live[1], "pc": f"{live[2]:#x}"}
    assert loaded_stop(tmp_path / "loaded", tmp_path / "saved")[0] == live


def test_lldb_22_decodes_the_bundle_natively_and_shows_the_stop_with_the_plugin(tmp_path, monkeypatch):
    from support import native_lldb

    binary = shutil.which("lldb-22")
    if binary is None or not native_lldb.available():
        pytest.skip("Debian's lldb-22 with python3-lldb-22 is not installed")
    program = launchable(tmp_path, monkeypatch, "fatal.c", "-O0", directory=tmp_path / "build")
    recording = record(str(program), ["abort"])
    write_bundle(recording, tmp_path / "bundle")
    [(tid, flow)] = recording.threads.items()
    assert native_lldb.decode_addresses(tmp_path / "bundle" / "trace.json") == {tid: list(flow.truth.addresses)}
    result = lldb_batch(
        binary,
        *LOAD_PLUGIN,
        f"trace load {tmp_path / 'bundle'}",
        "thread list",
    )
    assert result.returncode == 0, result.stderr
    stop = recording.stops[tid]
    assert f"tid = {tid}, {stop.pc:#018x} libc.so.6`" in result.stdout
    assert "stop reason = signal SIGABRT" in result.stdout
