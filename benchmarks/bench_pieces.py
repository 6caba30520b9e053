"""Where a decode in pieces spends its time: each piece's decode and forest, the child's file, the join (issue 30).

    .venv/bin/python benchmarks/bench_pieces.py BUNDLE [--workers 2]

Prints the seconds since the start at which each stage ends, in this process and in its decoding
children: a piece decoded (with its call forest), the child's piece written to its file, the
parent's copy of it read back, the whole decode, and the call forest joined.
"""

import argparse
import time

from lldb_trace.decode import parallel
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

STARTED = time.perf_counter()


def stamp(what):
    print(f"{time.perf_counter() - STARTED:8.2f} s  {what}", flush=True)


def stamped(function, before, after):
    def wrapper(*arguments, **options):
        stamp(before)
        result = function(*arguments, **options)
        stamp(after)
        return result

    return wrapper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    decoded = "a piece decoded, with its forest"
    parallel.decode_piece = stamped(parallel.decode_piece, "a piece's decode begins", decoded)
    parallel.write_part = stamped(parallel.write_part, "a child writes its piece", "a child wrote its piece")
    parallel.read_part = stamped(parallel.read_part, "the parent reads a piece back", "the parent read it")
    bundle = load_trace(args.bundle)
    trace = ProcessTrace(bundle, bundle.processes[0], workers=args.workers)
    tid = trace.tids[0]
    stamp("opened")
    trace.decoded(tid, for_forest=True)
    stamp("decoded")
    calls = len(trace.call_forest(tid))
    stamp(f"call forest joined: {calls:,} calls")


if __name__ == "__main__":
    main()
