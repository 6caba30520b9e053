"""Time native LLDB (lldb-22 and its own intel-pt plugin) on a trace bundle.

    python benchmarks/native_lldb.py [BUNDLE] [--repeat 3] [--json]

BUNDLE defaults to benchmarks/out/bundle-10m/trace.json (see benchmarks/make_bundle.py).
Every measurement is a fresh ``lldb-22 -x --batch`` process (``-x``: no
~/.lldbinit, so lldb_trace is never imported) with a minimal environment.
Wall time is time.perf_counter() around the process; peak RSS is the
``ru_maxrss`` that os.wait4() returns for that one child (unlike
RUSAGE_CHILDREN, which keeps the maximum over all earlier children).

Cases, each run ``repeat`` times, medians reported:

- ``startup``: ``version`` alone, lldb-22's own start and exit cost;
- ``load``: ``trace load B``;
- ``dump20``: ``trace load B`` + ``thread trace dump instructions -c 20``;
- ``info``: ``trace load B`` + ``thread trace dump info`` (+ ``-j``, for exact
  numbers).  Native LLDB decodes a thread's whole trace on first use, so
  ``info`` itself forces the full decode; it reports the item count
  (instructions + events + errors), "Decoding instructions" time and "Total
  approximate memory usage (excluding raw trace)", which are parsed;
- ``function_calls``: ``trace load B`` + ``thread trace dump function-calls -F FILE``
  (written to a file so terminal output does not dominate).

Import ``measure_native(bundle_path, repeat=3)`` for a dict of all of it.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BUNDLE = ROOT / "benchmarks" / "out" / "bundle-10m" / "trace.json"
TIMEOUT = 600


def find_lldb():
    """The native lldb-22 executable, or None."""
    for candidate in (shutil.which("lldb-22"), "/usr/lib/llvm-22/bin/lldb"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


LLDB = find_lldb()


def _env():
    """A minimal environment: nothing from the venv (PYTHONPATH, VIRTUAL_ENV) reaches lldb's embedded Python."""
    env = {"PATH": "/usr/bin:/bin"}
    for name in ("HOME", "LANG", "LC_ALL", "TMPDIR", "TERM"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def run_lldb(commands, workdir, lldb=None, timeout=TIMEOUT):
    """Run ``lldb -x --batch -o C ...`` once: ``{"seconds", "max_rss_kb", "returncode", "stdout", "stderr"}``."""
    lldb = lldb or LLDB
    if lldb is None:
        raise RuntimeError("lldb-22 not found (apt-get install lldb-22)")
    argv = [lldb, "-x", "--batch"]
    for command in commands:
        argv += ["-o", command]
    out_path, err_path = Path(workdir) / "stdout.txt", Path(workdir) / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=_env())
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return {
        "seconds": seconds,
        "max_rss_kb": usage.ru_maxrss,
        "returncode": proc.returncode,
        "stdout": out_path.read_text(errors="replace"),
        "stderr": err_path.read_text(errors="replace"),
    }


def _check(run, commands):
    """Native errors are failures: a non-zero exit or an ``error:`` line."""
    text = run["stdout"] + run["stderr"]
    errors = [line for line in text.splitlines() if line.lstrip().startswith("error:")]
    if run["returncode"] != 0 or errors:
        raise RuntimeError(f"lldb {commands} failed (rc {run['returncode']}): {errors[:3] or text[-500:]}")


def measure_case(commands, repeat=3, lldb=None, inspect=None):
    """Run ``commands`` ``repeat`` times in fresh processes; medians plus every run's numbers.

    ``inspect(run, workdir)`` may return a dict of facts parsed from the last run.
    """
    runs, facts = [], {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="native-lldb-") as workdir:
            concrete = [command.replace("{workdir}", workdir) for command in commands]
            run = run_lldb(concrete, workdir, lldb)
            _check(run, concrete)
            if inspect:
                facts = inspect(run, workdir)
        runs.append({"seconds": run["seconds"], "max_rss_kb": run["max_rss_kb"]})
    return {
        "commands": commands,
        "repeat": repeat,
        "seconds": statistics.median(r["seconds"] for r in runs),
        "max_rss_mb": statistics.median(r["max_rss_kb"] for r in runs) / 1024,
        "runs": runs,
        **facts,
    }


_UNITS = {"bytes": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def parse_info_text(text):
    """Numbers from native ``thread trace dump info`` text (the first thread shown)."""
    facts = {}
    if m := re.search(r"Total number of trace items: (\d+)", text):
        facts["items"] = int(m.group(1))
    if m := re.search(r"Total approximate memory usage \(excluding raw trace\): ([\d.]+) (\w+)", text):
        facts["memory_bytes_text"] = float(m.group(1)) * _UNITS[m.group(2)]
    if m := re.search(r"Average memory usage per item \(excluding raw trace\): ([\d.]+) bytes", text):
        facts["bytes_per_item_text"] = float(m.group(1))
    if m := re.search(r"Decoding instructions: ([\d.]+)s", text):
        facts["decode_seconds_text"] = float(m.group(1))
    if m := re.search(r"Raw trace size: ([\d.]+) (\w+)", text):
        facts["raw_trace_bytes_text"] = float(m.group(1)) * _UNITS[m.group(2)]
    return facts


def parse_info_json(text):
    """Numbers from native ``thread trace dump info -j`` (the JSON object in ``text``)."""
    info = json.loads(text[text.index("{") : text.rindex("}") + 1])
    stats = info["threadStats"]
    items = stats["traceItemsCount"]
    events = stats["events"]["totalCount"]
    errors = stats["errors"]["totalCount"]
    memory = int(stats["memoryUsage"]["totalInBytes"])
    return {
        "tid": stats["tid"],
        "items": items,
        "events": events,
        "errors": errors,
        "error_details": stats["errors"],
        "event_details": stats["events"]["individualCounts"],
        "instructions": items - events - errors,
        "decode_seconds": stats["timingInSeconds"].get("Decoding instructions"),
        "timing": stats["timingInSeconds"],
        "global_timing": info.get("globalStats", {}).get("timingInSeconds", {}),
        "memory_bytes": memory,
        "bytes_per_item": memory / items if items else None,
        "bytes_per_item_native": stats["memoryUsage"]["avgPerItemInBytes"],
    }


_INFO_JSON_MARK = "(lldb) thread trace dump info -j"


def _inspect_info(run, workdir):
    text = run["stdout"]
    head, _, tail = text.partition(_INFO_JSON_MARK)
    facts = parse_info_json(tail)
    facts.update(parse_info_text(head))
    return {"info": facts}


def _inspect_dump(run, workdir):
    lines = [line for line in run["stdout"].splitlines() if re.match(r"\s+\d+: 0x[0-9a-f]+", line)]
    return {"instruction_lines": len(lines), "first_lines": lines[:3]}


def _inspect_calls(run, workdir):
    path = Path(workdir) / "calls.txt"
    text = path.read_text(errors="replace")
    return {
        "output_bytes": len(text.encode()),
        "output_lines": text.count("\n"),
        "call_trees": len(re.findall(r"^\[call tree #\d+\]", text, re.M)),
    }


def lldb_version(lldb=None):
    out = subprocess.run([lldb or LLDB, "--version"], capture_output=True, text=True, env=_env()).stdout
    return out.strip().splitlines()[0] if out.strip() else ""


def measure_startup(repeat=3, lldb=None):
    """``lldb-22 -x --batch -o version``: what a process costs before any trace work."""
    return measure_case(["version"], repeat, lldb)


def measure_native(bundle_path, repeat=3, lldb=None):
    """Every native case on ``bundle_path``: ``{"lldb", "version", "bundle", "startup", "load", "dump20", "info",
    "function_calls"}``, each case with median ``seconds`` and ``max_rss_mb`` (see the module doc)."""
    bundle = str(Path(bundle_path).resolve())
    load = f'trace load "{bundle}"'
    return {
        "lldb": lldb or LLDB,
        "version": lldb_version(lldb),
        "bundle": bundle,
        "startup": measure_startup(repeat, lldb),
        "load": measure_case([load], repeat, lldb),
        "dump20": measure_case([load, "thread trace dump instructions -c 20"], repeat, lldb, _inspect_dump),
        "info": measure_case(
            [load, "thread trace dump info", "thread trace dump info -j"], repeat, lldb, _inspect_info
        ),
        "function_calls": measure_case(
            [load, 'thread trace dump function-calls -F "{workdir}/calls.txt"'], repeat, lldb, _inspect_calls
        ),
    }


def format_table(result):
    rows = [
        ("startup (version)", "startup"),
        ("trace load", "load"),
        ("load + dump instructions -c 20", "dump20"),
        ("load + dump info (full decode)", "info"),
        ("load + dump function-calls -F", "function_calls"),
    ]
    lines = [
        f"{result['version']} ({result['lldb']})",
        f"bundle: {result['bundle']}",
        "",
        f"| case | wall s (median of {result['load']['repeat']}) | runs s | peak RSS MB |",
        "| --- | ---: | --- | ---: |",
    ]
    for label, key in rows:
        case = result[key]
        runs = ", ".join(f"{r['seconds']:.2f}" for r in case["runs"])
        lines.append(f"| {label} | {case['seconds']:.2f} | {runs} | {case['max_rss_mb']:.0f} |")
    info = result["info"]["info"]
    decode = info["decode_seconds"]
    rate = f" = {info['instructions'] / decode / 1e6:.2f}M instructions/s" if decode else ""
    calls = result["function_calls"]
    lines += [
        "",
        f"native decode: {info['instructions']:,} instructions "
        f"({info['items']:,} items: {info['events']} events, {info['errors']} errors)",
        f"  decode time (Decoding instructions): {decode} s{rate}",
        f"  memory of decoded items: {info['memory_bytes']:,} bytes = {info['memory_bytes'] / 2**20:.1f} MiB, "
        f"{info['bytes_per_item']:.2f} bytes per item",
        f"  as text: {info.get('memory_bytes_text', 0) / 2**10:.2f} KiB, "
        f"{info.get('bytes_per_item_text')} bytes per item, decode {info.get('decode_seconds_text')} s",
        f"  events: {info['event_details']}",
        f"  errors: {info['error_details']}",
        f"function-calls output: {calls['output_bytes']:,} bytes, {calls['output_lines']:,} lines, "
        f"{calls['call_trees']} call trees",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, default=DEFAULT_BUNDLE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the result dict as JSON")
    args = parser.parse_args(argv)
    if not args.bundle.exists():
        parser.error(f"{args.bundle} does not exist (build it with: python benchmarks/make_bundle.py)")
    result = measure_native(args.bundle, args.repeat)
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
