"""``pt dump --function-calls``: the call forest, in execution order, as text or JSON.

Each call is ``[first index]``, indentation by depth (below the shallowest
call shown), ``module`function`` of the function that ran and its address.
A call through a PLT stub is named by the library function it reached, with
the stub (``via prog`symbol stub for: strlen``) where LLDB names the stub and
the names differ or ld.so bound it on that call.  A caller the trace returned into without
seeing its call is ``(untraced start)``, named by where the trace returned.
With timestamps each call shows its inclusive and exclusive time.

The window is COUNT calls: by default the last ones, OFFSET back from the
end; ``forwards`` counts from the first call instead; an anchor (--id) puts
the window's newest (or, forwards, oldest) call at the call that holds an
item.  The window is printed oldest first unless ``newest_first``; Enter
continues towards older calls, or newer ones going forwards.
"""

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class CallView:
    """Which calls to show and how."""

    count: int | None  # None: every call
    offset: int
    forwards: bool
    newest_first: bool
    flat: bool
    module: str | None = None  # a glob on the module's file name
    function: str | None = None  # a glob on the function's name (or the name of the stub it was called through)


def listed_calls(forest, view, symbolizer):
    """The calls the filters let through, in execution order."""
    calls = forest.calls()
    if view.module is None and view.function is None:
        return calls
    verdicts = {}

    def wanted(call):
        key = (call.address, call.stub)
        if key not in verdicts:
            verdicts[key] = _matches(call, view, symbolizer)
        return verdicts[key]

    return [call for call in calls if wanted(call)]


def _matches(call, view, symbolizer):
    if call.address is None:
        return False
    location = symbolizer.locate(call.address)
    if view.module is not None and not fnmatchcase(location.module or "", view.module):
        return False
    if view.function is None:
        return True
    names = [location.function, symbolizer.locate(call.stub).function if call.stub is not None else None]
    return any(name is not None and fnmatchcase(name, view.function) for name in names)


def anchor(calls, item):
    """Where item ``item`` is in ``calls``: the innermost listed call holding it, else the last one before it (-1)."""
    k = bisect_right(calls, item, key=lambda call: call.first) - 1
    if k < 0:
        return -1
    node = calls[k]
    while node is not None and node.last < item:
        node = node.parent
    while node is not None:
        position = bisect_left(calls, (node.first, node.depth), key=lambda call: (call.first, call.depth))
        if position < len(calls) and calls[position] is node:
            return position
        node = node.parent
    return k


def call_window(calls, view, start=None):
    """``(calls to show in execution order, where Enter continues or None)``.

    ``start`` is the position of the window's newest call (its oldest going
    forwards): a continuation's or an anchor's; by default OFFSET from the end
    (from the beginning going forwards).
    """
    total = len(calls)
    if start is None:
        start = view.offset if view.forwards else total - 1 - view.offset
    if view.forwards:
        start = max(start, 0)
        stop = total if view.count is None else min(total, start + view.count)
        return list(calls[start:stop]), (stop if stop < total else None)
    if start < 0 or start >= total:
        return [], None
    low = 0 if view.count is None else max(0, start + 1 - view.count)
    return list(calls[low : start + 1]), (low - 1 if low > 0 else None)


def _duration(decoded, call, conversion):
    first, last = decoded.timestamp(call.first), decoded.timestamp(call.last)
    if first is None or last is None:
        return None
    if conversion:
        return conversion.to_ns(last) - conversion.to_ns(first)
    return last - first


def timing(decoded, call, conversion):
    """``(inclusive, exclusive)`` in ns (TSC ticks without a conversion), or None without timestamps."""
    inclusive = _duration(decoded, call, conversion)
    if inclusive is None:
        return None
    children = sum(_duration(decoded, child, conversion) or 0 for child in call.children)
    return inclusive, max(0, inclusive - children)


def call_label(symbolizer, call):
    """``module`function`` of the function that ran (``(no instruction)`` when the trace has none for it)."""
    label = symbolizer.locate(call.address).function_label if call.address is not None else "(no instruction)"
    return label + (" (untraced start)" if call.untraced_start else "")


def stub_note(symbolizer, call):
    """``via module`symbol stub for: name, bound lazily`` where that says more than the label, else None.

    The stub is named when LLDB names it and either its name differs from the
    function's (an IFUNC's variant, an alias) or ld.so bound it on this call.
    """
    if call.stub is None:
        return None
    stub = symbolizer.locate(call.stub)
    named = stub.stub and stub.function is not None
    notes = []
    if named and (call.lazy_binding or stub.function != symbolizer.locate(call.address).function):
        notes.append(f"via {stub.function_label}")
    if call.lazy_binding:
        notes.append("bound lazily")
    return ", ".join(notes) or None


def text_lines(decoded, calls, view, symbolizer, conversion):
    shown = list(reversed(calls)) if view.newest_first else calls
    base = min((call.depth for call in calls), default=0)
    rows = [(f"[{call.first}]", ("" if view.flat else "  " * (call.depth - base)) + call_label(symbolizer, call), call)
            for call in shown]  # fmt: skip
    index_width = max((len(row[0]) for row in rows), default=0)
    label_width = max((len(row[1]) for row in rows), default=0)
    unit = "ns" if conversion else "ticks"
    lines = []
    for index_text, label, call in rows:
        address = f"0x{call.address:x}" if call.address is not None else "-"
        line = f"  {index_text:<{index_width}}  {label:<{label_width}}  {address}"
        note = stub_note(symbolizer, call)
        if note:
            line += f"  ({note})"
        times = timing(decoded, call, conversion) if decoded.has_timestamps else None
        if times:
            line += f"  inclusive {times[0]} {unit}, exclusive {times[1]} {unit}"
        lines.append(line)
    return lines


def json_calls(decoded, calls, view, symbolizer, conversion):
    objects = []
    for call in reversed(calls) if view.newest_first else calls:
        location = symbolizer.locate(call.address) if call.address is not None else None
        stub = symbolizer.locate(call.stub) if call.stub is not None else None
        entry = {
            "id": call.first,
            "lastId": call.last,
            "depth": call.depth,
            "module": location.module if location else None,
            "symbol": location.function if location else None,
            "loadAddress": f"0x{call.address:x}" if call.address is not None else None,
            "untracedStart": call.untraced_start,
            "stub": {"module": stub.module, "symbol": stub.symbol_text, "loadAddress": f"0x{call.stub:x}"}
            if stub
            else None,
            "lazyBinding": call.lazy_binding,
        }
        times = timing(decoded, call, conversion) if decoded.has_timestamps else None
        if times:
            entry["inclusive"], entry["exclusive"] = times
        objects.append(entry)
    return objects
