"""lldb_trace's decoder against native LLDB's, on the same bundle, side by side.

    python benchmarks/bench_decode.py [BUNDLE] [--repeat 3]

BUNDLE defaults to the 13M-instruction bundle of benchmarks/make_bundle.py.
Every number comes from a fresh process (peak RSS from os.wait4 for that one
child), medians of ``repeat`` runs:

- ``api``: plain Python, no LLDB: ProcessTrace.decoded (the full decode, in
  pieces on the machine's cores) plus the call forest; the decode's own time,
  the storage's bytes per instruction and the process's peak RSS;
- ``ours_dump20``: lldb-22 with lldb_trace imported: ``trace load`` + ``trace
  dump --instructions -c 20`` (a trace of 1 MiB or more is decoded only at
  its end for that: see bench_scale.py);
- native cases from native_lldb.py: lldb-22's own intel-pt plugin decoding
  the same bundle (``info`` forces and reports its full decode).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import native_lldb

ROOT = Path(__file__).resolve().parent.parent
SITE_PACKAGES = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))

_API_SCRIPT = """
import json, sys, time
from lldb_trace.trace_files import load_trace
from lldb_trace.process_trace import ProcessTrace
bundle = load_trace(sys.argv[1])
trace = ProcessTrace(bundle, bundle.processes[0], workers=int(sys.argv[2]))
tid = trace.tids[0]
started = time.perf_counter()
decoded = trace.decoded(tid, for_forest=True)  # with workers, each piece's call forest is built in its worker too
decoded_at = time.perf_counter()
forest = trace.call_forest(tid)
done = time.perf_counter()
print(json.dumps({
    "instructions": decoded.instruction_count, "items": decoded.item_count, "errors": decoded.error_count,
    "decode_seconds": decoded_at - started, "forest_seconds": done - decoded_at, "total_seconds": done - started,
    "calls": len(forest), "storage_bytes": decoded.storage_bytes, "loop": decoded.decode_loop,
    "bytes_per_instruction": decoded.storage_bytes / max(1, decoded.instruction_count),
}))
"""


def measure_api(bundle, workers, repeat):
    runs = []
    for _ in range(repeat):
        proc = subprocess.Popen(
            [sys.executable, "-c", _API_SCRIPT, str(bundle), str(workers)], stdout=subprocess.PIPE, cwd=ROOT
        )
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"the API run failed: {out[-500:]!r}")
        runs.append({**json.loads(out), "max_rss_mb": usage.ru_maxrss / 1024})
    middle = sorted(runs, key=lambda r: r["total_seconds"])[len(runs) // 2]
    return {**middle, "max_rss_mb": statistics.median(r["max_rss_mb"] for r in runs), "workers": workers}


def ours_commands(bundle):
    return [
        f"script import site; site.addsitedir('{SITE_PACKAGES}')",
        "command script import lldb_trace",
        f"trace load {bundle}",
        "trace dump --instructions -c 20",
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", default=str(native_lldb.DEFAULT_BUNDLE))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write every number to this file")
    args = parser.parse_args(argv)
    bundle = Path(args.bundle).resolve()
    if not bundle.exists():
        parser.error(f"{bundle} does not exist (build it with: python benchmarks/make_bundle.py)")
    workers = min(os.cpu_count() or 1, 4)
    results = {
        "api_parallel": measure_api(bundle, workers, args.repeat),
        "api_one_process": measure_api(bundle, 1, args.repeat),
        "ours_dump20": native_lldb.measure_case(ours_commands(bundle), args.repeat),
        "ours_calls": native_lldb.measure_case(
            [*ours_commands(bundle)[:3], 'trace dump --function-calls --all --file "{workdir}/calls.txt"'], args.repeat
        ),
        "native": native_lldb.measure_native(bundle, args.repeat),
    }
    print(format_results(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


def format_results(r):
    native, info = r["native"], r["native"]["info"].get("info", r["native"]["info"])
    api, one, ours = r["api_parallel"], r["api_one_process"], r["ours_dump20"]
    native_decode = info.get("decode_seconds")
    native_bytes = info.get("bytes_per_item")
    rows = [
        ("instructions", f"{api['instructions']:,}", f"{info.get('instructions', '?'):,}"),
        (f"full decode + call forest ({api['workers']} processes)", f"{api['total_seconds']:.2f} s", ""),
        ("full decode + call forest (1 process)", f"{one['total_seconds']:.2f} s", ""),
        ("full decode", f"{api['decode_seconds']:.2f} s", f"{native_decode:.2f} s" if native_decode else "?"),
        ("decoded storage per instruction", f"{api['bytes_per_instruction']:.2f} B", f"{native_bytes:.1f} B/item"),
        ("peak RSS, decoding process", f"{api['max_rss_mb']:.0f} MB (Python, no LLDB)",
         f"{native['info']['max_rss_mb']:.0f} MB (lldb-22)"),
        ("fresh trace load + dump -c 20, wall", f"{ours['seconds']:.2f} s", f"{native['dump20']['seconds']:.2f} s"),
        ("fresh trace load + dump -c 20, peak RSS", f"{ours['max_rss_mb']:.0f} MB",
         f"{native['dump20']['max_rss_mb']:.0f} MB"),
        ("fresh trace load + all function calls to a file", f"{r['ours_calls']['seconds']:.2f} s",
         f"{native['function_calls']['seconds']:.2f} s"),
        ("lldb-22 start alone, peak RSS", "", f"{native['startup']['max_rss_mb']:.0f} MB"),
    ]  # fmt: skip
    width = max(len(row[0]) for row in rows)
    lines = [f"| {'measure':<{width}} | lldb_trace | native lldb-22 |", f"| {'-' * width} | ---: | ---: |"]
    lines += [f"| {name:<{width}} | {ours_value} | {native_value} |" for name, ours_value, native_value in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
