"""Issue 17's numbers: first answers, the call forest and memory on large traces, side by side with lldb-22.

    python benchmarks/bench_scale.py [--bundle benchmarks/out/history-29m] [--repeat 3]
                                     [--sizes 64,256,1024] [--decode-size 64]

The bundle is benchmarks/history.py's (29M instructions, 1M calls; recorded on
first use).  Every LLDB number comes from a fresh process (wall time around
it, peak RSS from os.wait4 for that one child), medians of ``repeat`` runs:

1. first answers on the bundle: ``trace load`` + ``trace dump --instructions
   -c 20``, + ``thread trace dump function-calls -c 5``, + ``bt``, in the pip
   LLDB and in lldb-22 with lldb_trace; native lldb-22's own plugin for the
   dump and for its decode alone (``thread trace dump info``).  Native
   ``function-calls`` is not run: on this trace it was killed after 12 minutes
   at 24 GB (issue 17).
2. large traces: the bundle's trace repeated to SIZES megabytes (each copy ends
   with tracing disabled and the next starts at a PSB with tracing enabled, as
   a program traced run after run), loaded in both LLDBs with the last 20
   instructions dumped.
3. decode throughput: the whole DECODE_SIZE MB trace decoded from Python
   (ProcessTrace.decoded) with 1 and with 2 worker processes.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import history
import native_lldb

ROOT = Path(__file__).resolve().parent.parent
VENV_LLDB = Path(sys.executable).parent / "lldb"
SITE_PACKAGES = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
OUT = ROOT / "benchmarks" / "out"


def control_flow_only(bundle):
    """``bundle``'s trace.json without its states (cores, registers): those of one run, where no copy ends."""
    description = json.loads((bundle / "trace.json").read_text())
    process = description["processes"][0]
    for key in ("coreFile", "startCoreFile"):
        process.pop(key, None)
    for thread in process["threads"]:
        for key in ("registerStates", "syscallResults"):
            thread.pop(key, None)
    return description


def splice(bundle, megabytes):
    """A bundle whose one trace is ``bundle``'s repeated to ``megabytes`` MB (made once, in benchmarks/out)."""
    out = OUT / f"scale-{megabytes}mb"
    if (out / "trace.json").is_file():
        return out
    description = control_flow_only(bundle)
    [thread] = description["processes"][0]["threads"]
    trace = (bundle / thread["iptTrace"]).read_bytes()
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "traces").mkdir(parents=True)
    with open(staging / thread["iptTrace"], "wb") as file:
        for _ in range(-(-megabytes * 2**20 // len(trace))):
            file.write(trace)
    (staging / "modules").symlink_to((bundle / "modules").resolve())
    (staging / "trace.json").write_text(json.dumps(description, indent=2))
    os.replace(staging, out)
    return out


def plugin_lldb(lldb):
    """``(executable, commands that load lldb_trace)`` for the pip LLDB or lldb-22."""
    if lldb == "pip":
        return str(VENV_LLDB), ["command script import lldb_trace"]
    return native_lldb.LLDB, [
        f"script import site; site.addsitedir('{SITE_PACKAGES}')",
        "command script import lldb_trace",
    ]


def lldb_case(executable, commands, repeat):
    """Medians of ``repeat`` fresh runs; the last run's output is checked for errors."""
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as workdir:
            run = native_lldb.run_lldb(commands, workdir, executable)
            native_lldb._check(run, commands)
        runs.append(run)
    return {
        "seconds": statistics.median(run["seconds"] for run in runs),
        "max_rss_mb": statistics.median(run["max_rss_kb"] for run in runs) / 1024,
        "runs": [round(run["seconds"], 2) for run in runs],
        "tail": runs[-1]["stdout"].strip().splitlines()[-3:],
    }


def first_answers(bundle, repeat):
    load = f"trace load {bundle / 'trace.json'}"
    asks = {
        "dump20": "trace dump --instructions -c 20",
        "calls5": "thread trace dump function-calls -c 5",
        "bt": "bt",
    }
    results = {}
    for lldb in ("pip", "lldb-22"):
        executable, setup = plugin_lldb(lldb)
        for name, command in asks.items():
            results[f"{lldb} {name}"] = lldb_case(executable, [*setup, load, command], repeat)
    native = native_lldb.LLDB
    results["native startup"] = lldb_case(native, ["version"], repeat)
    results["pip startup"] = lldb_case(str(VENV_LLDB), ["version"], repeat)
    results["pip import"] = lldb_case(str(VENV_LLDB), plugin_lldb("pip")[1], repeat)
    results["native dump20"] = lldb_case(native, [load, "thread trace dump instructions -c 20"], repeat)
    results["native decode"] = lldb_case(native, [load, "thread trace dump info"], repeat)
    return results


_DECODE_SCRIPT = """
import json, sys, time
from lldb_trace.trace_files import load_trace
from lldb_trace.process_trace import ProcessTrace
bundle = load_trace(sys.argv[1])
trace = ProcessTrace(bundle, bundle.processes[0], workers=int(sys.argv[2]))
started = time.perf_counter()
decoded = trace.decoded(trace.tids[0])
seconds = time.perf_counter() - started
print(json.dumps({"instructions": decoded.instruction_count, "errors": decoded.error_count,
                  "seconds": seconds, "storage_bytes": decoded.storage_bytes}))
"""


def decode_throughput(bundle, workers):
    proc = subprocess.Popen([sys.executable, "-c", _DECODE_SCRIPT, str(bundle), str(workers)], stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"the decode failed: {out[-500:]!r}")
    result = json.loads(out)
    return {**result, "max_rss_mb": usage.ru_maxrss / 1024, "rate": result["instructions"] / result["seconds"]}


def report(bundle, answers, sizes, throughput):
    def cell(name):
        case = answers[name]
        return f"{case['seconds']:.2f} s, {case['max_rss_mb']:.0f} MB"

    lines = [
        f"bundle: {bundle} ({_trace_bytes(bundle) / 2**20:.1f} MB of trace)",
        "",
        "| fresh LLDB, trace load + | pip LLDB + lldb_trace | lldb-22 + lldb_trace | native lldb-22 |",
        "| --- | ---: | ---: | ---: |",
        f"| dump --instructions -c 20 | {cell('pip dump20')} | {cell('lldb-22 dump20')} | {cell('native dump20')} |",
        f"| function-calls -c 5 | {cell('pip calls5')} | {cell('lldb-22 calls5')} | not run (killed at 24 GB) |",
        f"| bt | {cell('pip bt')} | {cell('lldb-22 bt')} | |",
        f"| (native: dump info = its decode alone) | | | {cell('native decode')} |",
        f"| (start-up alone) | {cell('pip startup')}; + import lldb_trace {cell('pip import')} | |"
        f" {cell('native startup')} |",
        "",
        "| trace size | instructions (about) | trace load + dump -c 20, pip LLDB | lldb-22 + lldb_trace |",
        "| ---: | ---: | ---: | ---: |",
    ]
    per_mb = 29_007_008 / (_trace_bytes(bundle) / 2**20)
    for megabytes in sorted({megabytes for megabytes, _lldb in sizes}):
        pip, lldb22 = (sizes[megabytes, lldb] for lldb in ("pip", "lldb-22"))
        cells = [f"{case['seconds']:.2f} s, {case['max_rss_mb']:.0f} MB" for case in (pip, lldb22)]
        lines.append(f"| {megabytes} MB | {megabytes * per_mb / 1e6:,.0f}M | {cells[0]} | {cells[1]} |")
    lines += ["", "| whole decode | instructions | seconds | M instructions/s | decoded storage | peak RSS |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for workers, case in throughput.items():
        lines.append(
            f"| {workers} worker process(es) | {case['instructions']:,} | {case['seconds']:.1f} |"
            f" {case['rate'] / 1e6:.1f} | {case['storage_bytes'] / 2**20:.0f} MB | {case['max_rss_mb']:.0f} MB |"
        )
    return "\n".join(lines)


def _trace_bytes(bundle):
    return sum(path.stat().st_size for path in (bundle / "traces").iterdir())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(OUT / "history-29m"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="64,256,1024", help="megabytes of the spliced traces")
    parser.add_argument("--decode-size", type=int, default=64, help="megabytes of the trace decoded whole")
    parser.add_argument("--json", help="also write every number to this file")
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle)
    started = time.perf_counter()
    answers = first_answers(bundle, args.repeat)
    sizes = {}
    for megabytes in map(int, args.sizes.split(",")):
        big = splice(bundle, megabytes)
        for lldb in ("pip", "lldb-22"):
            executable, setup = plugin_lldb(lldb)
            command = [*setup, f"trace load {big / 'trace.json'}", "trace dump --instructions -c 20"]
            sizes[megabytes, lldb] = lldb_case(executable, command, args.repeat)
    big = splice(bundle, args.decode_size) / "trace.json"
    throughput = {workers: decode_throughput(big, workers) for workers in (1, 2)}
    print(report(bundle, answers, sizes, throughput))
    print(f"\n(measured in {time.perf_counter() - started:.0f} s)")
    if args.json:
        numbers = {"answers": answers, "sizes": {f"{mb} MB {lldb}": case for (mb, lldb), case in sizes.items()}}
        Path(args.json).write_text(json.dumps({**numbers, "throughput": throughput}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
