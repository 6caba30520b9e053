"""The recovery's windows: solving many reports progress and stops on Ctrl-C, keeping what it solved; a recorded
system call's result leaves what it does not list as it was."""

import subprocess

import pytest
from support.paths import SOURCES
from support.progress_log import Recorder
from support.stepped_truth import step_program

from lldb_trace import progress
from lldb_trace.values import recovery
from lldb_trace.values.machine_state import MachineState
from lldb_trace.values.recovery import SyscallResult, ThreadValues

CODE_AT = 0x401000


def test_solving_many_windows_reports_progress_and_stops_on_ctrl_c(tmp_path, monkeypatch):
    binary = tmp_path / "libc_work"
    subprocess.run(["gcc", "-g", "-O2", "-DROUNDS=2", "-o", str(binary), str(SOURCES / "libc_work.c")], check=True)
    truth = step_program(binary, 6000, until="finished")
    monkeypatch.setattr(recovery, "CHUNK", 1000)
    values = ThreadValues(truth.addresses, truth.read_code, end=truth.end, end_after_last=True)
    with progress.reporting(Recorder(stop_at=4)), pytest.raises(progress.WorkInterruptedError):
        values.registers_at(0)
    solved = len(values._final)
    assert 0 < solved < values.chunks  # the windows solved before Ctrl-C are kept
    watcher = Recorder()
    with progress.reporting(watcher):
        asked_again = [values.registers_at(position) for position in range(0, len(truth.addresses), 97)]
    title = f"Recovering the values of {(values.chunks - solved) * 1000:,} instructions"
    assert [entry for entry in watcher.log if entry[0] == "begin"] == [("begin", title, values.chunks - solved)]
    fresh = ThreadValues(truth.addresses, truth.read_code, end=truth.end, end_after_last=True)
    assert asked_again == [fresh.registers_at(position) for position in range(0, len(truth.addresses), 97)]


def test_a_recorded_system_call_leaves_what_it_does_not_list_as_it_was():
    """The recorder lists the registers a syscall changed: fs_base, which arch_prctl may set, is carried across
    a write(2) whose result lists only rax, rcx and r11."""
    code = bytes.fromhex("0f0590")  # syscall; nop
    start = MachineState({"rax": 1, "rdi": 1, "fs_base": 0x7FFFF7D8A740, "rflags": 0x246}, lambda a, s: b"")
    result = SyscallResult({"rax": 5, "rcx": CODE_AT + 2, "r11": 0x246})
    values = ThreadValues(
        [CODE_AT, CODE_AT + 2],
        lambda address, size: code[address - CODE_AT : address - CODE_AT + size],
        start=start,
        syscalls={0: result},
    )
    after = values.registers_at(1)
    assert (after["rax"], after["fs_base"], after["rflags"], after["rdi"]) == (5, 0x7FFFF7D8A740, 0x246, 1)
    assert values.registers_at(0)["rax"] == 1
