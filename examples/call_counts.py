"""Count the calls of each function, with the deepest depth each was called at.

    (lldb) pt script examples/call_counts.py                 # every function
    (lldb) pt script examples/call_counts.py -- fib 'libc*`*' # only these (names or globs)

A subscriber for ``pt script``: ``FUNCTIONS`` (here the script's arguments)
is applied before any Python runs, so the calls of other functions cost nothing.
"""

from collections import Counter

FUNCTIONS = globals().get("ARGS") or None  # pt script sets ARGS to the words after --

calls = Counter()
deepest = {}


def on_call(event):
    calls[event.function] += 1
    deepest[event.function] = max(deepest.get(event.function, 0), event.depth)


def finish():
    lines = [f"{'calls':>10}  {'deepest':>7}  function"]
    lines += [f"{count:>10,}  {deepest[name]:>7}  {name}" for name, count in calls.most_common(20)]
    if len(calls) > 20:
        lines.append(f"... and {len(calls) - 20} more functions ({sum(calls.values()):,} calls in all)")
    return "\n".join(lines)
