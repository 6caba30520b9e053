"""A large trace loads decoded only at its end, and LLDB shows the same as after a whole decode.

Committed bundles are small, so each test lowers ProcessTrace's threshold to
one byte: every trace is then "large".  The reference is the same bundle
loaded whole (the threshold as shipped), in the same LLDB.
"""

import re

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb22 import needs_lldb_22, run_lldb_22  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace import process_trace  # noqa: E402
from lldb_trace.debugger import registry  # noqa: E402

THREADS = TRACES / "threads" / "trace.json"
ITEM = re.compile(r"^\s+\[(-?\d+)\] (0x[0-9a-f]+)", re.M)


def run(tmp_path, bundle, commands, tail_first):
    """Each command's output (and what the plugin printed), in a fresh debugger."""
    folder = tmp_path / ("tail" if tail_first else "whole")
    folder.mkdir(parents=True)
    session = Session(folder)
    try:
        shown = process_trace.TAIL_FIRST_BYTES
        process_trace.TAIL_FIRST_BYTES = 1 if tail_first else shown
        try:
            session.ok(f"trace load {bundle}")
        finally:
            process_trace.TAIL_FIRST_BYTES = shown
        decoded_at_load = _decoded_threads(session)
        outputs = []
        for command in commands:
            printed_before = len(session.streams()[0])
            result = session.handle(command)
            assert result.Succeeded(), f"{command}: {result.GetError()}"
            outputs.append(result.GetOutput() + session.streams()[0][printed_before:])
        return decoded_at_load, outputs
    finally:
        session.close()


def _decoded_threads(session):
    trace = registry.for_target(session.target)
    return [tid for tid in trace.tids if trace.decoded_if_done(tid) is not None]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("tail-first")


def test_a_large_trace_loads_only_its_end_and_shows_where_each_thread_stopped(tmp):
    commands = ["thread list", "frame variable", "register read pc"]
    decoded, tail = run(tmp / "a", THREADS, commands, tail_first=True)
    whole_decoded, whole = run(tmp / "b", THREADS, commands, tail_first=False)
    assert decoded == [] and len(whole_decoded) == 4
    assert tail == whole


def test_the_session_info_says_how_much_of_a_thread_is_decoded(tmp):
    _, (info, _bt, after) = run(tmp / "i", THREADS, ["pt dump", "bt", "pt dump"], tail_first=True)
    assert re.search(r"decoded at its end only: its last \d+ instructions, from trace byte \d+ on", info)
    assert "instructions: 12270, errors: 0, events: 92" in after and "decoded at its end only" not in after


def test_bt_and_frame_select_decode_the_threads_they_show(tmp):
    commands = ["bt", "thread select 1", "up", "frame select 0", "bt all", "thread list"]
    decoded, tail = run(tmp / "c", THREADS, commands, tail_first=True)
    _, whole = run(tmp / "d", THREADS, commands, tail_first=False)
    assert decoded == []
    assert tail == whole
    assert "frame #3: 0x00007ffff7dfc24c libc.so.6`__libc_start_call_main" in tail[0]
    assert "frame #1: 0x00007ffff7ede8ea libc.so.6`__clone3" in tail[2]


def test_the_end_of_a_trace_is_numbered_from_the_end_until_the_rest_is_decoded(tmp):
    commands = [
        "thread trace dump instructions -c 5",
        "thread trace dump instructions -c 5 -C",  # what Enter does
        "pt goto -7",
        "thread trace dump instructions -c 5",
    ]
    _, tail = run(tmp / "e", THREADS, commands, tail_first=True)
    _, whole = run(tmp / "f", THREADS, ["thread trace dump instructions -c 12"], tail_first=False)
    end = [(int(index), address) for index, address in ITEM.findall(whole[0])]
    count = end[0][0] + 1
    first = [(int(index), address) for index, address in ITEM.findall(tail[0])]
    more = [(int(index), address) for index, address in ITEM.findall(tail[1])]
    assert [index for index, _ in first + more] == list(range(-1, -11, -1))
    assert [(count + index, address) for index, address in first + more] == end[:10]
    assert "numbered from the end, -1 being the last" in tail[0]
    assert f"Position: instruction {count - 7} of {count}." in tail[2]
    after = [(int(index), address) for index, address in ITEM.findall(tail[3])]
    assert after == end[:5] and "numbered from the end" not in tail[3]


def test_function_calls_and_history_decode_the_whole_trace(tmp):
    commands = ["thread trace dump function-calls -c 5", "pt reverse-step", "pt dump"]
    _, tail = run(tmp / "g", THREADS, commands, tail_first=True)
    _, whole = run(tmp / "h", THREADS, commands, tail_first=False)
    timeless = [[re.sub(r"decoded in [\d.]+ ms", "", text) for text in outputs] for outputs in (tail, whole)]
    assert timeless[0] == timeless[1]
    assert "instructions: 12270, errors: 0, events: 92, function calls: 243" in tail[2]


def test_an_interrupted_bt_shows_nothing_and_runs_again(tmp_path, monkeypatch):
    from lldb_trace.debugger import progress_reporter

    monkeypatch.setattr(process_trace, "TAIL_FIRST_BYTES", 1)
    session = Session(tmp_path)
    try:
        session.ok(f"trace load {THREADS}")
        checks = []
        monkeypatch.setattr(
            progress_reporter.LldbReporter, "interrupt_requested", lambda self: checks.append(1) or len(checks) >= 2
        )
        session.handle("bt")
        _out, err = session.streams()
        assert err.count("error: interrupted: decoding the trace of thread 5674 stopped") == 1
        assert _decoded_threads(session) == []
        monkeypatch.undo()
        assert "frame #3: 0x00007ffff7dfc24c libc.so.6`__libc_start_call_main" in session.ok("bt")
    finally:
        session.close()


@needs_lldb_22
def test_tail_first_loading_in_debians_lldb_22(tmp_path):
    commands = ["script import lldb_trace.process_trace as p; p.TAIL_FIRST_BYTES = 1", f"trace load {THREADS}",
                "thread trace dump instructions -c 2", "bt"]  # fmt: skip
    done = run_lldb_22(tmp_path, commands)
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert "[-1] 0x7ffff7ea9407 : syscall" in out and "[-2] 0x7ffff7ea9405" in out
    assert "frame #3: 0x00007ffff7dfc24c libc.so.6`__libc_start_call_main" in out
