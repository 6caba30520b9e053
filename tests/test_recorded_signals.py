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
