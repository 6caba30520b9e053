"""Issue 18's speed check: loading a trace from a perf.data against loading it from its JSON bundle.

    python benchmarks/bench_perf_data.py [--repeat 3] [--sizes 256]

The traces are bench_scale.py's: benchmarks/history.py's bundle (29M
instructions, 1M calls) and that trace repeated to SIZES megabytes.  Each is
written as a perf.data by lldb_trace's writer (per thread, one AUX buffer, as
``trace save --format perf`` writes it), then, in fresh LLDB processes (pip
LLDB and lldb-22 with lldb_trace; medians of REPEAT runs, peak RSS of that
process): ``trace load`` + ``trace dump --instructions -c 20``, and for the
29M trace ``thread trace dump function-calls -c 5`` (a whole decode and the
call tree).  "read once" is the time to read the perf.data file whole from
Python, page cache warm as in the loads: the issue's budget is the JSON
bundle's load plus that.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_scale
import history

sys.path.insert(0, str(bench_scale.ROOT))

from lldb_trace.bundle.saver import SaveModule, SaveProcess, SaveThread
from lldb_trace.perf_data import perf_data_bytes
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace


def as_perf_data(bundle_dir):
    """``bundle_dir``'s trace written as BUNDLE_DIR.perf.data beside it (once).

    Written by a child process: a forked LLDB's peak RSS counts the pages it shared with this
    process before exec, so this process must stay small.
    """
    out = bundle_dir.with_suffix(".perf.data")
    if not out.is_file():
        subprocess.run([sys.executable, __file__, "--write", str(bundle_dir)], check=True)
    return out


def write_perf_data(bundle_dir):
    out = bundle_dir.with_suffix(".perf.data")
    bundle = load_trace(bundle_dir / "trace.json")
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process)
    threads = tuple(SaveThread(tid, trace.trace_bytes(tid)) for tid in trace.tids)
    modules = tuple(SaveModule(m.system_path, m.path, m.load_address, m.build_id or m.uuid) for m in process.modules)
    out.write_bytes(perf_data_bytes(SaveProcess(process.pid, process.triple, threads, modules), bundle.cpu))
    return out


def read_once(path, repeat):
    """Median seconds to read ``path`` whole."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with open(path, "rb") as file:
            while file.read(1 << 24):
                pass
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(name, bundle_dir, asks, repeat):
    perf_data = as_perf_data(bundle_dir)
    rows = []
    for lldb in ("pip", "lldb-22"):
        executable, setup = bench_scale.plugin_lldb(lldb)
        for ask_name, command in asks.items():
            cells = {}
            for kind, load in (("json", bundle_dir / "trace.json"), ("perf", perf_data)):
                cells[kind] = bench_scale.lldb_case(executable, [*setup, f"trace load {load}", command], repeat)
            rows.append((name, lldb, ask_name, cells))
    return rows, perf_data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="256", help="megabytes of repeated trace (comma separated; '' for none)")
    parser.add_argument("--write", metavar="BUNDLE_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_perf_data(Path(args.write))
        return
    bundle = history.build_bundle(bench_scale.OUT / "history-29m")
    cases = [("29M instructions", bundle, {"dump20": "trace dump --instructions -c 20",
                                           "calls5": "thread trace dump function-calls -c 5"})]  # fmt: skip
    for size in filter(None, args.sizes.split(",")):
        cases.append(
            (f"{size} MB", bench_scale.splice(bundle, int(size)), {"dump20": "trace dump --instructions -c 20"})
        )
    lines = [
        "| trace | LLDB | command | JSON bundle | perf.data | perf.data file | read once |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, bundle_dir, asks in cases:
        rows, perf_data = measure(name, bundle_dir, asks, args.repeat)
        once = read_once(perf_data, args.repeat)
        size = perf_data.stat().st_size / 2**20
        for trace, lldb, ask, cells in rows:
            json_cell, perf_cell = (f"{cells[k]['seconds']:.2f} s, {cells[k]['max_rss_mb']:.0f} MB" for k in cells)
            lines.append(f"| {trace} | {lldb} | {ask} | {json_cell} | {perf_cell} | {size:.0f} MB | {once:.3f} s |")
    print("\n".join(lines))
    subprocess.run(["uname", "-srm"], check=False)


if __name__ == "__main__":
    main()
