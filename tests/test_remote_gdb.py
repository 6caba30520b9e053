"""GDB 13 over `lldb-trace serve`: the committed `record full` answers, replayed through the protocol.

Each program's sequences (test_traces/history/NAME/gdb.json: what GDB 13's `record full` answered,
position by position) run again in Debian's GDB, connected with `target remote | lldb-trace serve
--stdio BUNDLE`: GDB's own reverse-step, reverse-next, reverse-finish, reverse-continue, their
forward twins and breakpoints, over bs/bc/s/c and Z0, with `record goto N` as `monitor goto N`.
GDB unwinds from the registers and stack the server recovers, so these are the bundles that have
values (a core and the recorder's register states).  qsort_callback's recording has none: it
predates the recorder's values, and its run is not the same on other CPUs (glibc picks another
memmove), so it cannot be recorded again with GDB's answers kept.
"""

import json
import subprocess

import pytest
from support.gdb_remote import SERVE, ask, compare, gdb_version
from support.paths import HISTORY, ROOT

WITH_VALUES = [
    "recursion", "lines", "nodebug", "longjmp", "tailcall", "contexts", "gradebook", "exceptions", "signal_handler",
]  # fmt: skip


@pytest.mark.parametrize("name", WITH_VALUES)
def test_gdb_over_the_server_agrees_with_record_full(name, tmp_path):
    reference, answers = ask(name, tmp_path)
    result = compare(reference, answers, gdb_version())
    assert result.checked >= 30
    assert not result.problems, "\n".join(result.problems)


def test_the_bundles_without_values_are_the_ones_said():
    without_core = {
        path.name
        for path in HISTORY.iterdir()
        if (path / "trace.json").is_file()
        and "coreFile" not in json.loads((path / "trace.json").read_text())["processes"][0]
    }
    assert without_core == {"qsort_callback"}


def test_the_bug_hunt_in_gdb_finds_the_write_with_a_watchpoint():
    """The README's gradebook crash: `watch -l student->course` and `reverse-continue` stop at add_mark's store,
    with the pointer's value before it and the mark it became, as GDB shows a write found backwards over rr."""
    bundle = HISTORY / "gradebook"
    commands = ["set pagination off", f"target remote | {SERVE} {bundle}", "watch -l student->course"]
    commands += ["reverse-continue", "bt", "reverse-continue", "monitor info"]
    arguments = ["gdb", "-batch", "-nx", *[word for command in commands for word in ("-ex", command)]]
    run = subprocess.run(arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=ROOT)
    first, second = run.stdout.split("Hardware watchpoint 1: -location student->course")[2:4]
    assert "Old value = (struct course *) 0x6" in first and "New value = (struct course *) 0x4a40d0 <algebra>" in first
    assert "in add_mark (student=0x7fffffffeb80, mark=6) at" in first and "gradebook.c:23" in first
    assert "#1  0x000000000040175b in main () at" in first
    assert "Old value = (struct course *) 0x4a40d0 <algebra>" in second
    assert "New value = (struct course *) 0x0" in second
    assert "at position 10:" in second


def test_reverse_movements_move_the_thread_gdb_shows():
    """GDB without scheduler-locking sends ``Hc0`` before ``bc``/``bs``: the server moves the thread GDB selected
    (its ``Hg``), not the first one; a thread GDB steps off its breakpoint first (``Hc<tid>``) does not take
    that place.  threads' worker threads each run worker; thread 1 of GDB is the first of them."""
    bundle = ROOT / "test_traces" / "threads"
    commands = ["set pagination off", f"target remote | {SERVE} {bundle}", "thread 1", "break worker"]
    commands += ["reverse-continue", "monitor info", "thread 2", "reverse-stepi", "monitor info"]
    arguments = ["gdb", "-batch", "-nx", *[word for command in commands for word in ("-ex", command)]]
    run = subprocess.run(arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=ROOT)
    assert "Thread 1 hit Breakpoint 1, worker" in run.stdout and "received signal SIGTRAP" not in run.stdout
    first, second = run.stdout.split("process 5674:")[1:3]
    assert "* thread 5675 at position 119:" in first and "thread 5674 at position 12270: end of history" in first
    assert "* thread 5676 at position 2151:" in second  # one instruction back from its end
