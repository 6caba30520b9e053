"""How long the thread spent in malloc and free (or the functions given), callees included.

    (lldb) pt script examples/time_in_malloc.py
    (lldb) pt script examples/time_in_malloc.py -- calloc realloc

A call lasts from its call event to its return event: nanoseconds when the trace
has timestamps (TSC ticks without a conversion), else the instructions it ran.
Calls still running at the end of the walked range are left out.
"""

from collections import Counter

FUNCTIONS = globals().get("ARGS") or ["malloc", "free"]  # pt script sets ARGS to the words after --

started = {}  # the call's row in the call forest -> its time (None without timestamps)
totals, returns = Counter(), Counter()
timed = False


def on_call(event):
    started[event.row] = event.time


def on_return(event):
    global timed
    if event.row not in started:
        return  # called before the walked range began
    start = started.pop(event.row)
    timed = start is not None
    call = event.call
    totals[event.function] += event.time - start if timed else call.last - call.first + 1
    returns[event.function] += 1


def finish():
    if not returns:
        return f"no calls of {', '.join(FUNCTIONS)} returned in the walked range"
    unit = "time" if timed else "instructions"  # time: ns, or TSC ticks when the bundle has no conversion
    rows = [f"{'calls':>8}  {'total ' + unit:>20}  function"]
    rows += [f"{returns[name]:>8,}  {total:>20,}  {name}" for name, total in totals.most_common()]
    return "\n".join(rows)
