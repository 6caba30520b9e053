"""Recording speed: lldb_trace's software recorder against GDB's ``record full``.

    python benchmarks/bench_record.py [N] [-O0|-O2] [--live-only] [--program million|libc_work]

All record the same program from main until it calls finished(), on the same
machine.  The program is built with the optimization level (-O0 by default)
and N:

- million (test_traces/src/million.c, -DN=N): nested loops, no library calls,
  about 13*N*N instructions at -O0 in blocks of about 6;
- libc_work (test_traces/src/libc_work.c, -DROUNDS=N): malloc, qsort,
  snprintf, AVX string functions and stdout writes, N rounds.

The recorders:

- ``lldb_trace record``: the standalone recorder (ptrace single-steps);
- ``pt start --backend software``: the recorder driven by LLDB's process
  control (a scripted thread plan that predicts the thread's path in an
  emulator and lets the real thread run each predicted stretch to its end,
  or runs it branch to branch), timed around its ``continue`` only;
- GDB's ``record full``, timed around its ``continue`` only, via its Python API.

``--live-only`` skips the two single-steppers, which take minutes from N=300 on.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lldb_trace.capture.ptrace_recorder.recording import RecordOptions, record

SOURCES = Path(__file__).resolve().parent.parent / "test_traces" / "src"
SIZE_MACRO = {"million": "N", "libc_work": "ROUNDS"}

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


def build(directory, program, n, optimization="-O0"):
    binary = Path(directory) / program
    source = SOURCES / f"{program}.c"
    size = f"-D{SIZE_MACRO[program]}={n}"
    subprocess.run(["gcc", optimization, "-g", size, "-o", str(binary), str(source)], check=True)
    return str(binary)


def ours(binary):
    started = time.perf_counter()
    recording = record(binary, [], RecordOptions(until="finished"))
    return recording.instructions, time.perf_counter() - started


def lldb_live(binary):
    """``pt start --backend software`` + ``continue`` to finished() in the pip LLDB, in-process."""
    import lldb

    from lldb_trace.debugger import live_session as live

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
    output = subprocess.run(["gdb", "-batch", "-nx", "-x", str(script), binary], capture_output=True, text=True)
    failure = re.search(r"Process record does not support [^\n]*", output.stdout + output.stderr)
    if failure:
        return failure.group(0)
    output = output.stdout
    seconds = float(re.search(r"GDB_SECONDS ([\d.]+)", output).group(1))
    count = int(re.search(r"Log contains (\d+) instructions", output).group(1))
    return count, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=60)
    parser.add_argument("--live-only", action="store_true")
    parser.add_argument("--program", choices=sorted(SIZE_MACRO), default="million")
    optimization = next((a for a in sys.argv[1:] if re.fullmatch(r"-O[0-3s]", a)), "-O0")  # gcc's spelling
    arguments = parser.parse_args([a for a in sys.argv[1:] if a != optimization])
    with tempfile.TemporaryDirectory() as directory:
        binary = build(directory, arguments.program, arguments.n, optimization)
        runs = [("pt start --backend software", lldb_live(binary))]
        if not arguments.live_only:
            runs = [("lldb_trace record", ours(binary)), *runs, ("gdb record full", gdb(binary, directory))]
        for name, result in runs:
            if result is None:
                print(f"{name:<28} (gdb not installed)")
            elif isinstance(result, str):
                print(f"{name:<28} failed: {result}")
            else:
                count, seconds = result
                rate = f"{count / seconds:>9,.0f}"
                print(f"{name:<28} {count:>9} instructions in {seconds:7.2f} s = {rate} instructions/s")


if __name__ == "__main__":
    main()
