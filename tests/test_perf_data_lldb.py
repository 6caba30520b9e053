"""perf.data in the debugger: ``trace load`` gives the targets a bundle gives, ``trace save --format perf`` round trips.

Checked in the pip LLDB in-process and in Debian's lldb-22 as a user runs it, and
``lldb-trace record --format perf`` writes a perf.data the plugin and Linux perf read.
"""

import contextlib
import os
import re
import shutil
import subprocess
import sys

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb22 import needs_lldb_22, run_lldb_22  # noqa: E402
from support.lldb_session import Session  # noqa: E402
from support.trace_scripts import cases, scenarios  # noqa: E402

THREADS = TRACES / "threads" / "trace.json"
COMMANDS = ["thread list", "bt", "pt dump --instructions -c 8", "bt all"]
THREAD_NUMBER = re.compile(r"^[ *]+thread #\d+[:,]", re.M)


@pytest.fixture(scope="module")
def threads_perf(tmp_path_factory):
    if not scenarios.modules_match(THREADS):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    return cases.make("threads", tmp_path_factory.mktemp("perf"))


def outputs(tmp_path, load, commands=COMMANDS):
    session = Session(tmp_path)
    try:
        loaded = session.ok(f"pt load {load}")
        return loaded, [session.ok(command) for command in commands], session
    finally:
        session.close()


def test_a_perf_data_loads_as_the_same_targets_as_its_bundle(tmp_path, threads_perf):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    loaded, from_perf, _ = outputs(tmp_path / "a", threads_perf)
    _, from_bundle, _ = outputs(tmp_path / "b", THREADS)
    assert "(perf.data, Intel family 6 model 85 stepping 4)" in loaded
    assert "threads, pid 5674, 4 thread(s), 3 module(s)" in loaded
    # Threads are numbered by tid from a perf.data (the main thread first), in the bundle's order from a bundle.
    assert [sorted(THREAD_NUMBER.sub("thread", text).splitlines()) for text in from_perf] == [
        sorted(THREAD_NUMBER.sub("thread", text).splitlines()) for text in from_bundle
    ]


def test_trace_save_format_perf_round_trips_and_perf_reads_it(tmp_path, threads_perf):
    session = Session(tmp_path)
    try:
        session.ok(f"trace load {THREADS}")
        saved = session.ok(f"pt save --format perf {tmp_path / 'saved.data'}")
        assert "(perf.data)" in saved
        refused = session.handle(f"pt save --format perf {tmp_path / 'saved.data'}")
        assert not refused.Succeeded() and "already exists: add --force" in refused.GetError()
        assert session.handle(f"trace save -f --format perf {tmp_path / 'saved.data'}").Succeeded()
        shown = ["bt", "pt dump --instructions -c 8"]
        before = [THREAD_NUMBER.sub("thread", session.ok(command)) for command in shown]
        session.ok(f"trace load {tmp_path / 'saved.data'}")
        after = [THREAD_NUMBER.sub("thread", session.ok(command)) for command in shown]
        assert after == before and "[12269] 0x7ffff7ea9407" in after[1]
    finally:
        session.close()
    if shutil.which("perf"):
        ours = cases.perf_script(tmp_path / "saved.data")
        assert {tid: len(ips) for tid, ips in ours.items()} == {5674: 12270, 5675: 1232, 5676: 2152, 5677: 3072}


def test_a_bad_perf_data_leaves_no_target(tmp_path, threads_perf):
    bad = tmp_path / "cut.data"
    bad.write_bytes(threads_perf.read_bytes()[:300])
    session = Session(tmp_path)
    try:
        result = session.handle(f"pt load {bad}")
        assert not result.Succeeded()
        assert result.GetError().strip().count("\n") == 0 and "truncated" in result.GetError()
        assert session.debugger.GetNumTargets() == 0
    finally:
        session.close()


def test_search_path_finds_a_moved_binary_in_the_debugger(tmp_path, threads_perf):
    program = tmp_path / "bin" / "threads"
    program.parent.mkdir()
    shutil.copy(TRACES / "threads" / "modules" / "threads", program)
    recorded = str(TRACES / "threads" / "modules").encode()
    data = threads_perf.read_bytes().replace(recorded, recorded[:-1] + b"Z")  # the same length: a path now empty
    moved = tmp_path / "moved.data"
    moved.write_bytes(data)
    session = Session(tmp_path)
    try:
        missing = session.ok(f"pt load {moved}")
        assert "2 module(s)" in missing
        dump = session.ok("pt dump")
        assert "binary not found, its code is a gap in the trace" in dump
        found = session.ok(f"pt load --search-path {program.parent} {moved}")
        assert "threads, pid 5674, 4 thread(s), 3 module(s)" in found
    finally:
        session.close()


@needs_lldb_22
def test_debians_lldb_22_loads_a_perf_data(tmp_path, threads_perf):
    commands = [f"trace load {threads_perf}", "thread list", "bt", f"trace save --format perf {tmp_path / 'x.data'}"]
    done = run_lldb_22(tmp_path, commands)
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert "thread #4: tid = 5677" in out
    assert "frame #3: 0x00007ffff7dfc24c libc.so.6`__libc_start_call_main" in out
    assert (tmp_path / "x.data").read_bytes()[:8] == b"PERFILE2"


def test_the_recorder_writes_a_perf_data(tmp_path):
    program = scenarios.build(scenarios.BY_NAME["static"], tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "out"), "--format", "perf", "--",
         str(program)], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = tmp_path / "out" / "perf.data"
    truth = (tmp_path / "out" / "ground_truth").glob("*.txt")
    (truth_file,) = list(truth)
    expected = [int(line, 16) for line in truth_file.read_text().splitlines() if re.match(r"0x", line)]
    session = Session(tmp_path)
    try:
        session.ok(f"trace load {path}")
        dump = session.ok(f"pt dump --instructions --forwards --raw -c {len(expected) + 5}")
    finally:
        session.close()
    found = [int(ip, 16) for ip in re.findall(r"^\s+\[\d+\] (0x[0-9a-f]+)", dump, re.M)]
    assert found == expected
    if shutil.which("perf"):
        assert list(cases.perf_script(path).values()) == [expected]


def _open_descriptors(path):
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            found += os.readlink(f"/proc/self/fd/{fd}") == str(path)
    return found


def test_a_deleted_target_lets_go_of_its_trace_and_its_file(tmp_path, threads_perf):
    """Each load kept its perf.data open for good (a trace's values and histories, kept by the trace, held it): a
    long session ran out of descriptors after about a thousand loads, and LLDB crashed."""
    from lldb_trace.debugger import registry

    session = Session(tmp_path)
    try:
        for _ in range(3):
            session.ok(f"pt load {threads_perf}")
            session.ok("pt goto 10")  # a history, and its values, kept for the trace
            session.ok("target delete --all")
        session.ok(f"pt load {threads_perf}")
        assert _open_descriptors(os.path.realpath(threads_perf)) == 1
        assert sum(r.target.IsValid() for r in registry._registrations.values()) == len(registry._registrations)
    finally:
        session.close()
