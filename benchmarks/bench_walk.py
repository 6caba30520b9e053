"""The subscriber API's cost model: time per event of ``thread.walk`` with no subscriber, with a
filtered-out subscriber, and with empty callbacks, on the 29M-instruction trace.

    .venv/bin/python benchmarks/bench_walk.py [--bundle DIR] [--repeat 3] [--instructions N]

The bundle is benchmarks/history.py's (hot_calls.c -DN=1000: 29.0 million
instructions, 1.0 million calls; recorded on first use).  As the XPTI
tracing framework measures its dispatcher, each case is the walk's own cost
per event, callbacks doing nothing; what a real callback does adds to it:

- no subscriber: ``thread.walk()``, per event of the trace (instructions,
  calls and returns: what a subscriber to all of them would get);
- filtered-out subscriber: on_call, on_return and on_instruction with
  ``functions=["finished"]`` over the items before finished() runs: every
  event is filtered out before Python; per event of that range;
- an empty on_call over every call, an empty on_return too (per event);
- an empty on_instruction over the first N instructions (default: all);
- on_instruction with ``functions=["mix"]``: per instruction delivered;
- the floor: a Python loop calling an empty function with one new object
  per call, what no pure-Python dispatcher can beat.

The first decode, the call forest and a name filter's first reading of the
symbol tables are paid once per trace and are timed apart (setup).  Each
case is the best of ``repeat`` walks in one process after the setup: the
machine is shared, and the best run is the one least disturbed.
"""

import argparse
import sys
import time
from pathlib import Path

import history

from lldb_trace import api

ROOT = Path(__file__).resolve().parent.parent


def best_of(repeat, function):
    """``(best seconds, the last result)`` of ``repeat`` calls."""
    best, result = None, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    return best, result


def nothing(_event):
    return None


class _Object:
    __slots__ = ("a", "b", "c", "d", "e", "f", "g")

    def __init__(self, a, b, c, d, e, f, g):
        self.a, self.b, self.c, self.d, self.e, self.f, self.g = a, b, c, d, e, f, g


def floor(count):
    """A loop handing a new 7-slot object to an empty function ``count`` times."""
    for k in range(count):
        if nothing(_Object(k, None, k, k, None, None, None)) is False:
            break


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=history.DEFAULT_BUNDLE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instructions", type=int, default=None, help="walk only the first N instructions")
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle) if args.bundle == history.DEFAULT_BUNDLE else args.bundle
    thread = api.open_bundle(bundle).threads[0]
    setup = {}
    started = time.perf_counter()
    items = thread.item_count
    setup["first decode"] = time.perf_counter() - started
    started = time.perf_counter()
    thread.call_forest()
    setup["call forest"] = time.perf_counter() - started
    started = time.perf_counter()
    found = []
    thread.walk(on_call=lambda event: found.append(event.index), functions=["finished"])
    setup["first walk with a name filter (reads the modules' symbol tables)"] = time.perf_counter() - started
    before = f"0:{found[0] - 1}"  # every item before finished() is called
    calls = thread.walk(on_call=nothing).delivered["call"]
    returns = thread.walk(on_return=nothing).delivered["return"]
    events = thread.decoded.instruction_count + calls + returns
    events_before = thread.walk(on_call=nothing, on_return=nothing, range=before).events + found[0]
    slice_ = f"0:{args.instructions - 1}" if args.instructions else None
    walked = args.instructions or thread.decoded.instruction_count

    rows = []

    def case(label, denominator, what, **walk):
        seconds, summary = best_of(args.repeat, lambda: thread.walk(**walk))
        per = denominator or summary.events
        rows.append((label, f"{per:,} {what}", seconds, seconds / per * 1e9))
        print(f"{seconds:8.3f} s  {label}: {summary}", file=sys.stderr, flush=True)

    case("no subscriber: `thread.walk()`", events, "events")
    filtered = dict(on_call=nothing, on_return=nothing, on_instruction=nothing, functions=["finished"])
    case("filtered-out subscriber (on_call, on_return, on_instruction)", events_before, "events", range=before,
         **filtered)  # fmt: skip
    case("empty on_call", None, "calls", on_call=nothing)
    case("empty on_call and on_return", None, "events", on_call=nothing, on_return=nothing)
    case("empty on_instruction", None, "instructions", on_instruction=nothing, range=slice_)
    case("on_instruction, functions=['mix']", None, "instructions delivered", on_instruction=nothing,
         functions=["mix"], range=slice_)  # fmt: skip
    seconds, _ = best_of(args.repeat, lambda: floor(1_000_000))
    rows.append(("floor: a Python call with a new object", "1,000,000 calls", seconds, seconds * 1e3))

    print(f"bundle: {bundle}: {items:,} items, {calls:,} calls, {returns:,} returns; instructions walked: {walked:,}")
    print(f"Python {sys.version.split()[0]}; best of {args.repeat}\n")
    print("| setup (once per trace) | seconds |\n| --- | ---: |")
    for label, seconds in setup.items():
        print(f"| {label} | {seconds:.2f} |")
    print("\n| case | per | seconds | ns per event |\n| --- | ---: | ---: | ---: |")
    for label, per, seconds, ns in rows:
        print(f"| {label} | {per} | {seconds:.3f} | {ns:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
