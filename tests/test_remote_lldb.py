"""LLDB over `lldb-trace serve --port`: `process continue --reverse` and forward movement, in the pip LLDB and lldb-22.

The LLDB binaries run as a user runs them (`lldb PROGRAM -o 'gdb-remote PORT' ...`), with no
plugin loaded: the reverse execution is LLDB's own (`bc`/`bs` packets, LLDB 21 and later).  Where
each command leaves the thread is asked of the server (`process plugin packet monitor info`) and
set against the Python API's answers on the same bundle.
"""

import re
import shlex
import shutil
import subprocess
import sys

import pytest
from support.gdb_remote import program_file
from support.paths import HISTORY, ROOT, TRACES

import lldb_trace.api as pt

RECURSION = HISTORY / "recursion"
LLDBS = {"pip": ROOT / ".venv" / "bin" / "lldb", "lldb-22": shutil.which("lldb-22")}
POSITION = re.compile(r"\* thread \d+ at position (\d+):")


@pytest.fixture
def server():
    command = [sys.executable, "-m", "lldb_trace.cli", "serve", "--port", "0", str(RECURSION)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = process.stderr.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
    yield port
    process.terminate()
    assert process.wait(timeout=60) is not None


def run_lldb(which, port, commands, bundle=RECURSION, timeout=300):
    """LLDB's output for each command, and the server's position after it (a monitor packet after each)."""
    binary = LLDBS[which]
    if binary is None or not shutil.which(str(binary)):
        pytest.skip(f"{which} is not installed")
    arguments = [str(binary), "--no-lldbinit", str(program_file(bundle)), "-o", f"gdb-remote {port}"]
    for command in commands:
        arguments += ["-o", f"script print('@@ {command}')", "-o", command, "-o", "process plugin packet monitor info"]
    arguments += ["-o", "quit"]
    run = subprocess.run(arguments, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    pieces = run.stdout.split("\n@@ ")[1:]
    assert len(pieces) == len(commands), run.stdout[-3000:] + run.stderr[-3000:]
    answers = []
    for piece in pieces:
        found = POSITION.search(piece)
        answers.append((piece, int(found.group(1)) if found else None))
    return answers


@pytest.mark.parametrize("which", ["pip", "lldb-22"])
def test_reverse_continue_and_forward_steps(which, server):
    thread = pt.open_bundle(RECURSION).threads[0]
    history = thread.history
    entry = next(iter(thread.symbolizer.function_entries("fact")))
    fact = thread.symbolizer.prologue_end(entry)
    first = history.continue_([fact], reverse=True).position
    second = history.continue_([fact], reverse=True).position
    stepped = history.next().position
    forward = history.continue_([fact]).position
    commands = [
        "process continue --reverse",  # nothing set: the beginning of history
        "process continue --forward",  # and the end
        "breakpoint set -n fact",
        "process continue --reverse",
        "frame variable n",
        "process continue --reverse",
        "frame variable n",
        "register read rip",
        "bt",
        "thread step-over",
        "process continue --forward",
        "memory read -s8 -c1 -fx $rsp",
    ]
    answers = run_lldb(which, server, commands)
    (boundary, begin), (end_boundary, end) = answers[0], answers[1]
    assert "stop reason = history boundary" in boundary and begin == 0
    assert "stop reason = history boundary" in end_boundary and end == history.end
    assert "stop reason = breakpoint 1.1" in answers[3][0] and answers[3][1] == first
    assert "(int) n = 1" in answers[4][0]
    assert answers[5][1] == second and "(int) n = 2" in answers[6][0]
    assert f"rip = {history.pc_at(second):#018x}" in answers[7][0]
    frames = re.findall(r"frame #\d+: 0x[0-9a-f]+ recursion`(\w+)", answers[8][0])
    expected = [thread.locate(frame.pc).function for frame in thread.stack_at(second)]
    assert frames[: len(expected)] == expected  # and on: the core where recording began knows main's callers
    assert "stop reason = step over" in answers[9][0] and answers[9][1] == stepped
    assert "stop reason = breakpoint 1.1" in answers[10][0] and answers[10][1] == forward
    rsp = thread.registers_at(forward)["rsp"]
    data, mask = thread.read_memory_at(forward, rsp, 8)
    assert mask == b"\xff" * 8
    assert f"{rsp:#x}: {int.from_bytes(data, 'little'):#018x}" in answers[11][0]


@pytest.mark.parametrize("which", ["pip", "lldb-22"])
def test_every_forward_movement_at_the_end_stops_at_the_history_boundary(which, server):
    """LLDB's step-in and step-out took the end's history boundary for a stop of their own and resumed again,
    forever (the server answering each resume at 100% CPU)."""
    end = pt.open_bundle(RECURSION).threads[0].history.end
    commands = ["thread step-in", "thread step-out", "thread step-over", "process continue", "si", "ni"]
    for text, position in run_lldb(which, server, commands, timeout=120):
        assert "stop reason = history boundary: the trace ends here" in text and position == end


@pytest.mark.parametrize("which", ["pip", "lldb-22"])
def test_a_watchpoint_and_reverse_continue_find_the_write(which):
    """The README's gradebook crash: LLDB's own watchpoint (Z2) and `process continue --reverse` stop at add_mark's
    store over the course pointer, then at main's.  At a crash LLDB would deliver the signal on resuming, which it
    refuses to do in reverse: `process handle` first."""
    gradebook = HISTORY / "gradebook"
    command = [sys.executable, "-m", "lldb_trace.cli", "serve", "--port", "0", str(gradebook)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)", process.stderr.readline()).group(1))
        commands = [
            "process handle SIGSEGV -p false -s true",
            "watchpoint set expression -w write -s 8 -- 0x7fffffffeb98",
            "process continue --reverse",
            "process continue --reverse",
        ]
        answers = run_lldb(which, port, commands, gradebook)
    finally:
        process.terminate()
        process.wait(timeout=60)
    (first, at_first), (second, at_second) = answers[2], answers[3]
    assert "stop reason = watchpoint 1" in first and at_first == 173
    assert "student->marks[student->count] = mark;" in first
    assert "stop reason = watchpoint 1" in second and at_second == 10


@pytest.mark.parametrize("which", ["pip", "lldb-22"])
def test_the_announced_lldb_command_loads_every_module_where_it_ran(which):
    """LLDB takes neither the program nor the libraries from a server (it reads the dynamic linker's list from
    memory, which a trace without a core does not hold): the command the server prints adds them."""
    binary = LLDBS[which]
    if binary is None:
        pytest.skip(f"{which} is not installed")
    crash = TRACES / "crash"
    process = subprocess.Popen(
        [sys.executable, "-m", "lldb_trace.cli", "serve", "--port", "0", str(crash)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        announced = [process.stderr.readline() for _ in range(3)]
        words = shlex.split(announced[2].split("lldb: ", 1)[1])
        words[0] = str(binary)
        run = subprocess.run(
            [*words, "--no-lldbinit", "-o", "image list", "-o", "quit"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=60)
    listed = run.stdout.split("image list", 2)[-1]
    for module in pt.open_bundle(crash).processes[0].process.modules:
        assert re.search(rf"{module.load_address:#018x} \S*/{re.escape(module.path.name)}\b", listed), listed
    assert "stop reason = signal SIGSEGV" in run.stdout and "crash.c:8" in run.stdout
