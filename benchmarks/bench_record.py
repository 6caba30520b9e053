"""Recording speed: lldb_trace's software recorder against GDB's ``record full``.

    python benchmarks/bench_record.py [N] [-O0|-O2]

All record the same program (test_traces/src/million.c built with -DN=N and
the optimization level, -O0 by default: about 13*N*N instructions in blocks
of about 6) from main until it calls finished(), on the same machine:

- ``lldb_trace record``: the standalone recorder (ptrace single-steps);
- ``pt start --backend software``: the recorder driven by LLDB's process
  control (a scripted thread plan that runs the live process from branch to
  branch under LLDB), timed around its ``continue`` only;
- GDB's ``record full``, timed around its ``continue`` only, via its Python API.
"""

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lldb_trace.capture.session import RecordOptions, record

SOURCE = Path(__file__).resolve().parent.parent / "test_traces" / "src" / "million.c"

GDB_SCRIPT = """
set pagination off
set confirm off
break main
run
record full
set record full insn-number-max unlimited
break finished
python import time; started = time.perf_counter()
continue
python print("GDB_SECONDS", time.perf_counter() - started)
info record
kill
"""


def build(directory, n, optimization="-O0"):
    binary = Path(directory) / "million"
    subprocess.run(["gcc", optimization, "-g", f"-DN={n}", "-o", str(binary), str(SOURCE)], check=True)
    return str(binary)


def ours(binary):
    started = time.perf_counter()
    recording = record(binary, [], RecordOptions(until="finished"))
    return recording.instructions, time.perf_counter() - started


def lldb_live(binary):
    """``pt start --backend software`` + ``continue`` to finished() in the pip LLDB, in-process."""
    import lldb

    from lldb_trace.target import live

    debugger = lldb.SBDebugger.Create(False)
    debugger.SetAsync(False)
    interpreter = debugger.GetCommandInterpreter()
    result = lldb.SBCommandReturnObject()
    for command in ("command script import lldb_trace", f"file {binary}", "b main", "b finished", "run",
                    "pt start --backend software"):  # fmt: skip
        interpreter.HandleCommand(command, result)
    started = time.perf_counter()
    interpreter.HandleCommand("continue", result)
    seconds = time.perf_counter() - started
    target = debugger.GetSelectedTarget()
    session = live.session_for(target)
    count = sum(session.backend.steps(tid) for tid in session.tids)
    target.GetProcess().Kill()
    lldb.SBDebugger.Destroy(debugger)
    return count, seconds


def gdb(binary, directory):
    if not shutil.which("gdb"):
        return None
    script = Path(directory) / "record.gdb"
    script.write_text(GDB_SCRIPT)
    output = subprocess.run(["gdb", "-batch", "-nx", "-x", str(script), binary], capture_output=True, text=True).stdout
    seconds = float(re.search(r"GDB_SECONDS ([\d.]+)", output).group(1))
    count = int(re.search(r"Log contains (\d+) instructions", output).group(1))
    return count, seconds


def main(n, optimization):
    with tempfile.TemporaryDirectory() as directory:
        binary = build(directory, n, optimization)
        runs = (
            ("lldb_trace record", ours(binary)),
            ("pt start --backend software", lldb_live(binary)),
            ("gdb record full", gdb(binary, directory)),
        )
        for name, result in runs:
            if result is None:
                print(f"{name:<28} (gdb not installed)")
                continue
            count, seconds = result
            print(f"{name:<28} {count:>9} instructions in {seconds:7.2f} s = {count / seconds:>9,.0f} instructions/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60, sys.argv[2] if len(sys.argv) > 2 else "-O0")
