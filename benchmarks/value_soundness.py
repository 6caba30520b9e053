"""Never a wrong value: the recovery from the end core alone against the registers the recorder saw.

    .venv/bin/python benchmarks/value_soundness.py OUTDIR [PROGRAM ...]

Builds each C program of test_traces/src (or those named, without ``.c``) at
``-O0`` and ``-O2``, records it with ``lldb-trace record --threads all`` (which
keeps every thread's registers before every instruction, ``registerStates``),
writes a copy of the bundle that keeps the end core alone (no start core,
system calls' results or register states: what a crash's perf.data and core
give), and compares every general register the copy shows at every position
with the recorder's.  Prints, per recording, the share of register values the
end core alone gives and how many are wrong (must be 0), then the total wrong.
Ground truth the recovery did not produce: the registers ptrace read.
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import lldb_trace.api as api
from lldb_trace.values.machine_state import GENERAL

SOURCES = Path(__file__).resolve().parent.parent / "test_traces" / "src"
# Not whole programs (libraries, helpers), programs that run until stopped, or whose run is too long to record
# at every instruction here (hot_calls.c: hundreds of millions).
SKIPPED = {"endless", "million", "forks", "fatal", "libcalls", "opaque", "static", "steps", "hot_calls",
           "forest_mix", "forest_mix_lib", "nodebug", "nodebug_lib"}  # fmt: skip


def end_core_only(bundle):
    """A copy of ``bundle`` (a trace.json) beside it with the end core alone; its path."""
    document = json.loads(bundle.read_text())
    for process in document["processes"]:
        process.pop("startCoreFile", None)
        for thread in process["threads"]:
            thread.pop("registerStates", None)
            thread.pop("syscallResults", None)
    copy = bundle.with_name("end_core_only.json")
    copy.write_text(json.dumps(document))
    return copy


def compare(recorded, recovered):
    """``(known, total, wrong)`` general register values at every position where the recorder saw them."""
    known = total = wrong = 0
    for truth, shown in zip(api.open_bundle(recorded).threads, api.open_bundle(recovered).threads, strict=True):
        for position in range(truth.item_count + 1):
            seen, values = truth.registers_at(position), shown.registers_at(position)
            if seen["rsp"] is None:  # no recorder state here (before the last 250,000): the trace's pc alone
                continue
            for name in GENERAL:
                if seen.get(name) is None:
                    continue
                total += 1
                if values.get(name) is not None:
                    known += 1
                    wrong += values[name] != seen[name]
    return known, total, wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="a folder for the builds and recordings")
    parser.add_argument("programs", nargs="*", help="program names (default: every one of test_traces/src)")
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    names = args.programs or sorted(p.stem for p in SOURCES.glob("*.c") if p.stem not in SKIPPED)
    total_wrong = 0
    for name in names:
        for level in ("-O0", "-O2"):
            label, binary = f"{name}{level}", args.outdir / f"{name}{level}"
            build = ["gcc", "-g", level, "-pthread", "-o", str(binary), str(SOURCES / f"{name}.c"), "-lm"]
            if subprocess.run(build, capture_output=True).returncode:
                print(f"{label}: does not build here")
                continue
            recording = args.outdir / f"recorded_{label}"
            shutil.rmtree(recording, ignore_errors=True)
            record = [sys.executable, "-m", "lldb_trace.cli", "record", "--threads", "all", "-o", str(recording)]
            subprocess.run([*record, "--", str(binary)], capture_output=True, timeout=900, stdin=subprocess.DEVNULL)
            if not (recording / "trace.json").exists():
                print(f"{label}: no recording")
                continue
            known, total, wrong = compare(recording / "trace.json", end_core_only(recording / "trace.json"))
            total_wrong += wrong
            print(f"{label}: {known}/{total} register values from the end core ({100 * known / max(total, 1):.1f}%)"
                  f", wrong {wrong}", flush=True)  # fmt: skip
    print(f"wrong in all: {total_wrong}")
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
