"""Issue 19's numbers: profiles and exports of a 29M-instruction, 1M-call trace, in both LLDBs, beside lldb-22.

    python benchmarks/bench_analysis.py [--bundle benchmarks/out/history-29m] [--repeat 3]

Every number is a fresh LLDB process (bench_scale.lldb_case: wall time around
it, peak RSS of that one child, medians of ``repeat`` runs) that loads the
bundle and runs one command; ``calls5`` (``thread trace dump function-calls
-c 5``: the whole decode and the call forest) is the baseline every other case
pays first, so a case's own cost is its time less that baseline's.  Native
lldb-22 has no profile or export: its whole decode (``thread trace dump
info``) is what it does of this work; its call tree of this trace was killed
after 12 minutes at 24 GB (issue 17).
"""

import argparse
import tempfile
from pathlib import Path

import bench_scale
import history
import native_lldb

ASKS = {
    "calls5": "thread trace dump function-calls -c 5",
    "profile by function": "pt profile -c 10",
    "profile by line": "pt profile --by line -c 10",
    "profile by module": "pt profile --by module",
    "export chrome": "pt export --force --format chrome {out}/t.json",
    "export perfetto": "pt export --force --format perfetto {out}/t.pftrace",
    "export speedscope": "pt export --force --format speedscope {out}/t.speedscope.json",
    "export folded": "pt export --force --format folded {out}/t.folded",
}


def measure(bundle, repeat):
    load = f"trace load {bundle / 'trace.json'}"
    results = {}
    for lldb in ("pip", "lldb-22"):
        executable, setup = bench_scale.plugin_lldb(lldb)
        for name, command in ASKS.items():
            with tempfile.TemporaryDirectory(prefix="bench-analysis-") as out:
                case = [*setup, load, command.format(out=out)]
                results[lldb, name] = bench_scale.lldb_case(executable, case, repeat)
                results[lldb, name]["bytes"] = sum(p.stat().st_size for p in Path(out).iterdir())
    results["native", "decode"] = bench_scale.lldb_case(native_lldb.LLDB, [load, "thread trace dump info"], repeat)
    return results


def report(bundle, results):
    def cell(lldb, name):
        case = results[lldb, name]
        return f"{case['seconds']:.2f} s, {case['max_rss_mb']:.0f} MB"

    def own(lldb, name):
        return f"{results[lldb, name]['seconds'] - results[lldb, 'calls5']['seconds']:+.2f} s"

    lines = [
        f"bundle: {bundle}",
        "",
        "| fresh LLDB, trace load + | pip LLDB + lldb_trace | its own part | lldb-22 + lldb_trace | its own part"
        " | file |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in ASKS:
        size = results["pip", name]["bytes"]
        lines.append(
            f"| {name} | {cell('pip', name)} | {own('pip', name) if name != 'calls5' else 'baseline'} |"
            f" {cell('lldb-22', name)} | {own('lldb-22', name) if name != 'calls5' else 'baseline'} |"
            f" {_size(size)} |"
        )
    lines.append(f"| native lldb-22: dump info (its whole decode) | | | {cell('native', 'decode')} | | |")
    return "\n".join(lines)


def _size(size):
    if not size:
        return ""
    return f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / 1024:.1f} KB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=bench_scale.OUT / "history-29m")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle)  # recorded on first use
    print(report(bundle, measure(bundle, args.repeat)))


if __name__ == "__main__":
    main()
