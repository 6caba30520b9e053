"""Decode against call-forest build on one bundle, in this (fresh) process: times, bytes per call, peak RSS.

.venv/bin/python benchmarks/bench_forest.py BUNDLE     # e.g. benchmarks/out/history-29m (benchmarks/history.py)
"""

import resource
import sys
import time

from lldb_trace import api


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(path):
    thread = api.open_bundle(path).threads[0]
    started = time.perf_counter()
    decoded = thread.decoded
    decode = time.perf_counter() - started
    decoded_mb = peak_mb()
    started = time.perf_counter()
    forest = thread.call_forest()
    build = time.perf_counter() - started
    print(
        f"{decoded.instruction_count:,} instructions, {len(forest):,} calls: decode {decode:.2f} s, "
        f"call forest {build:.2f} s ({build / decode:.2f} of the decode), "
        f"{forest.storage_bytes / len(forest):.1f} bytes per call; "
        f"peak RSS {decoded_mb:.0f} MB decoded, {peak_mb():.0f} MB with the forest"
    )


if __name__ == "__main__":
    main(sys.argv[1])
