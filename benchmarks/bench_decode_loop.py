"""The plugin's whole decode of one thread against a plain C loop over libipt's pt_blk_next, side by side.

    .venv/bin/python benchmarks/bench_decode_loop.py [BUNDLE] [--repeat 5]

BUNDLE defaults to benchmarks/out/history-29m (29 million instructions,
recorded by history.py on first use).  One run builds
c_reference/blk_decode.c with gcc -O2 -lipt (libipt-dev's header) and times,
in turns, each a fresh process on one core:

- ``C reference``: blk_decode.c, libipt's block decoder with the plugin's
  flags and the bundle's executable segments, events drained, no storage;
- ``compiled loop``: ``ProcessTrace(bundle, process, workers=1).decoded(tid)``,
  the plugin's whole decode (image, decode loop, storage, gap names) with
  block_loop.c;
- ``Python loop``: the same with ``LLDB_TRACE_DECODE_LOOP=python``.

Prints medians of ``repeat`` runs as a markdown table for RESULTS.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import history

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "benchmarks" / "c_reference" / "blk_decode.c"

_PLUGIN_SCRIPT = """
import json, sys, time
from lldb_trace.decode import compiled_loop
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace
bundle = load_trace(sys.argv[1])
process = bundle.processes[0]
trace = ProcessTrace(bundle, process, workers=1)
tid = process.threads[0].tid
started = time.perf_counter()
decoded = trace.decoded(tid)
seconds = time.perf_counter() - started
print(json.dumps({"instructions": decoded.instruction_count, "seconds": seconds, "loop": decoded.decode_loop,
                  "why": compiled_loop.unavailable_reason()}))
"""


def build_reference(folder):
    program = Path(folder) / "blk_decode"
    subprocess.run(["gcc", "-O2", "-o", str(program), str(REFERENCE), "-lipt"], check=True)
    return program


def reference_arguments(bundle_path):
    """blk_decode's arguments for the bundle's first thread: trace, CPU, and every executable segment."""
    from lldb_trace.trace_files import load_trace

    bundle = load_trace(bundle_path)
    process = bundle.processes[0]
    cpu = bundle.cpu
    arguments = [str(process.threads[0].trace), str(cpu.family), str(cpu.model), str(cpu.stepping)]
    for module in process.modules:
        for segment in module.segments:
            if segment.executable and segment.size:
                arguments += [str(module.path), str(segment.offset), str(segment.size), str(segment.vaddr)]
    return arguments


def run_reference(program, arguments):
    out = subprocess.run(["taskset", "-c", "0", str(program), *arguments], capture_output=True, text=True, check=True)
    instructions, _, _, _, seconds = out.stdout.split()
    return {"instructions": int(instructions), "seconds": float(seconds), "loop": "C"}


def run_plugin(bundle, loop):
    environment = {**os.environ, "LLDB_TRACE_DECODE_LOOP": loop}
    command = ["taskset", "-c", "0", sys.executable, "-c", _PLUGIN_SCRIPT, str(bundle)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=environment)
    return json.loads(out.stdout.splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, default=history.DEFAULT_BUNDLE)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle) if args.bundle == history.DEFAULT_BUNDLE else args.bundle
    cases = {"C reference": [], "compiled loop": [], "Python loop": []}
    with tempfile.TemporaryDirectory() as folder:
        program = build_reference(folder)
        arguments = reference_arguments(bundle)
        for _ in range(args.repeat):  # in turns, so a busy moment on the machine costs each case alike
            cases["C reference"].append(run_reference(program, arguments))
            cases["compiled loop"].append(run_plugin(bundle, "compiled"))
            cases["Python loop"].append(run_plugin(bundle, "python"))
    compiled = cases["compiled loop"][0]
    if compiled["loop"] != "compiled":
        sys.exit(f"the compiled loop did not run: {compiled['why']}")
    counts = {run["instructions"] for runs in cases.values() for run in runs}
    if len(counts) != 1:
        sys.exit(f"the decodes disagree on the instruction count: {sorted(counts)}")
    floor = statistics.median(run["seconds"] for run in cases["C reference"])
    print(f"{bundle}: {counts.pop()} instructions, medians of {args.repeat} runs on one core\n")
    print("| decode | instructions | seconds | M instructions/s | ratio to C |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, runs in cases.items():
        seconds = statistics.median(run["seconds"] for run in runs)
        instructions = runs[0]["instructions"]
        rate = instructions / seconds / 1e6
        print(f"| {name} | {instructions} | {seconds:.3f} | {rate:.1f} | {seconds / floor:.2f} |")


if __name__ == "__main__":
    main()
