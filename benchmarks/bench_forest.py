"""Decode against call-forest build on one bundle, in this (fresh) process: times, bytes per call, peak RSS.

.venv/bin/python benchmarks/bench_forest.py BUNDLE [--repeat N] [--python-forest]

BUNDLE is e.g. benchmarks/out/history-29m (benchmarks/history.py).  The forest is built N times
(default 5) and its median time reported; peak RSS is read after the first build.
``--python-forest`` builds it with the numpy code instead of forest_runs.c, as
``LLDB_TRACE_DECODE_LOOP=python`` would, while the decode keeps its own loop.
"""

import argparse
import os
import resource
import statistics
import time

from lldb_trace import api
from lldb_trace.decode import compiled_runs
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.compiled_loop import ENVIRONMENT


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    parser.add_argument("--repeat", type=int, default=5, help="forest builds to take the median of")
    parser.add_argument("--python-forest", action="store_true", help="build the forest with the numpy code")
    options = parser.parse_args()
    thread = api.open_bundle(options.bundle).threads[0]
    started = time.perf_counter()
    decoded = thread.decoded
    decode = time.perf_counter() - started
    decoded_mb = peak_mb()
    if options.python_forest:
        os.environ[ENVIRONMENT] = "python"  # read by the forest at each build; the decode is done
    trace = thread.process_trace
    plt = trace.code.plt  # as ProcessTrace.call_forest builds it
    times, with_forest_mb = [], None
    for _ in range(options.repeat):
        started = time.perf_counter()
        forest = CallForest(decoded, trace.expander, trace.functions, plt)
        times.append(time.perf_counter() - started)
        with_forest_mb = with_forest_mb or peak_mb()
        del forest
    forest = CallForest(decoded, trace.expander, trace.functions, plt)
    build = statistics.median(times)
    loops = "compiled" if compiled_runs.library() is not None else "numpy"
    print(
        f"{decoded.instruction_count:,} instructions, {len(forest):,} calls: decode {decode:.2f} s "
        f"({decoded.decode_loop} loop), call forest {build:.3f} s median of {len(times)} "
        f"(min {min(times):.3f}, {loops} runs; {build / decode:.2f} of the decode), "
        f"{forest.storage_bytes / len(forest):.1f} bytes per call; "
        f"peak RSS {decoded_mb:.0f} MB decoded, {with_forest_mb:.0f} MB with the forest"
    )


if __name__ == "__main__":
    main()
