"""Whole decode + call forest on 1, 2, 4, ... cores, beside libipt's plain C loop and native lldb-22 (issue 30).

    .venv/bin/python benchmarks/bench_cores.py [--sizes 0,64,1024] [--workers 1,2] [--repeat 1] [--native]

Size 0 is the 29M-instruction bundle itself (benchmarks/history.py); other
sizes are that trace repeated to so many MB (bench_scale.splice).  Every
number comes from a fresh process (wall time inside it, peak RSS from
os.wait4 for that child): the C reference (benchmarks/c_reference, one
core), the plugin's whole decode and call forest with N worker processes
(ProcessTrace.decoded, then call_forest), and with ``--native`` lldb-22's
own intel-pt plugin decoding the 29M bundle (``thread trace dump info``
forces its whole decode; larger traces would take minutes and tens of GB).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_decode
import bench_decode_loop
import bench_scale
import history
import native_lldb


def plugin(bundle, workers, repeat):
    """The whole decode and call forest in fresh processes (bench_decode.py's API case), medians."""
    case = bench_decode.measure_api(bundle / "trace.json", workers, repeat)
    return {"instructions": case["instructions"], "decode": case["decode_seconds"], "forest": case["forest_seconds"],
            "calls": case["calls"], "rss": case["max_rss_mb"], "loop": case["loop"]}  # fmt: skip


def c_reference(program, bundle, repeat):
    arguments = bench_decode_loop.reference_arguments(bundle / "trace.json")
    runs, rss = [], []
    for _ in range(repeat):
        result, peak = _child_text(["taskset", "-c", "0", str(program), *arguments])
        runs.append(result)
        rss.append(peak)
    return {"instructions": runs[-1][0], "decode": statistics.median(r[1] for r in runs), "rss": max(rss)}


def _child_text(command):
    """``((instructions, seconds), peak RSS in MB)`` of one run of the C reference."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{command[:3]} failed: {out[-500:]!r}")
    instructions, _, _, _, seconds = out.split()
    return (int(instructions), float(seconds)), usage.ru_maxrss / 1024


def native(bundle):
    """lldb-22's own plugin: its whole decode (``thread trace dump info``), wall time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="bench-cores-") as workdir:
        commands = [f"trace load {bundle / 'trace.json'}", "thread trace dump info"]
        run = native_lldb.run_lldb(commands, workdir, native_lldb.LLDB)
        native_lldb._check(run, commands)
    return {"decode": run["seconds"], "rss": run["max_rss_kb"] / 1024}


def report(rows):
    lines = [
        "| trace | decoder | instructions | decode | call forest | M instructions/s (decode + forest) | peak RSS |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for trace, name, case in rows:
        total = case["decode"] + case.get("forest", 0.0)
        forest = f"{case['forest']:.2f} s ({case['calls']:,} calls)" if "forest" in case else ""
        rate = f"{case['instructions'] / total / 1e6:.0f}" if case.get("instructions") else ""
        rss = f"{case['rss']:.0f} MB" if "rss" in case else ""
        count = f"{case['instructions']:,}" if case.get("instructions") else ""
        lines.append(f"| {trace} | {name} | {count} | {case['decode']:.2f} s | {forest} | {rate} | {rss} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(bench_scale.OUT / "history-29m"))
    parser.add_argument("--sizes", default="0,64", help="MB of the repeated traces (0: the bundle itself)")
    parser.add_argument("--workers", default="1,2", help="worker counts to run the plugin with")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--native", action="store_true", help="also native lldb-22 on the 29M bundle")
    parser.add_argument("--json", help="also write every number to this file")
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle)
    started, rows = time.perf_counter(), []
    folder = tempfile.mkdtemp(prefix="bench-cores-")
    program = bench_decode_loop.build_reference(folder)
    for megabytes in map(int, args.sizes.split(",")):
        traced = bundle if megabytes == 0 else bench_scale.splice(bundle, megabytes)
        name = "29M bundle" if megabytes == 0 else f"{megabytes} MB"
        rows.append((name, "libipt C loop, 1 core", c_reference(program, traced, args.repeat)))
        for workers in map(int, args.workers.split(",")):
            rows.append((name, f"lldb_trace, {workers} worker(s)", plugin(traced, workers, args.repeat)))
        if args.native and megabytes == 0:
            rows.append((name, "native lldb-22 (decode only)", native(traced)))
    print(report(rows))
    print(f"\n(cores here: {len(os.sched_getaffinity(0))}; measured in {time.perf_counter() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
