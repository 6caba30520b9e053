"""A signal the recorder saw (its system call's results and its frame saved) is a delivery as one the trace
alone pairs with its rt_sigreturn: memory the kernel left alone carries across it.  It was a cut: between two
handled signals (test_traces/src/two_signals.c) every stack byte the program did not touch was unknown, so a
full recording showed the caller's frames as the trace's (``[synthetic]``) with no variable."""

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SOURCES

from lldb_trace import api


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two_signals")
    binary = folder / "two_signals"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "two_signals.c")], check=True)
    command = [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(folder / "rec"), "--"]
    subprocess.run([*command, str(binary)], check=True, capture_output=True, timeout=300)
    return folder / "rec" / "trace.json"


def test_the_stack_the_kernel_left_alone_is_known_between_two_recorded_signals(recorded):
    (thread,) = api.open_bundle(recorded).threads
    values = thread.values()
    symbol = thread.symbolizer
    entries = [i for i, pc in enumerate(values.addresses) if symbol.locate(pc).function == "between"]
    first = entries[0]  # between's first instruction: both deliveries around it were recorded
    assert sum(1 for k in values.syscalls.values() if k.before) == 2
    slot = thread.registers_at(first)["rbp"] + 8  # main's return address, stored before the first signal
    main_entry = next(i for i, pc in enumerate(values.addresses) if symbol.locate(pc).function == "main")
    stored = thread.read_memory_at(main_entry + 1, slot, 8)
    assert stored[1] == b"\xff" * 8
    assert thread.read_memory_at(first, slot, 8) == stored  # unknown before: the first delivery was a cut
    assert values.conflicts == 0


def test_a_fault_handler_that_returns_and_two_signals_at_once_keep_every_value(tmp_path):
    """test_traces/src/fault_retry.c: after a fault's handler returns, rt_sigreturn restores the flags with RF set,
    which the next instruction clears.  Its recorded states differed inside one segment of rflags, a conflict:
    the full recording showed no value at all (StatesDisagreeError).  Then two pending signals are delivered at
    one instruction: the recorder kept two frames there, and its own bundle was refused at load."""
    binary = tmp_path / "fault_retry"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "fault_retry.c")], check=True)
    command = [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(tmp_path / "rec"), "--"]
    done = subprocess.run([*command, str(binary)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (thread,) = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    values = thread.values()
    flags = [values._recorded.at(position)["rflags"] for position in range(values.count)]
    assert any(value & 0x10000 for value in flags)  # RF, after the handler's return
    asked = range(0, thread.item_count, 25)
    known = [thread.read_memory_at(position, thread.registers_at(position)["rsp"] + 8, 8)[1] for position in asked]
    assert known.count(b"\xff" * 8) > len(known) // 2 and values.conflicts == 0  # the stack is shown: no conflict
