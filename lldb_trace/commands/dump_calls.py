"""``pt dump --function-calls``: the call forest as the RFC draws it.

Each call is ``[first index]``, indentation by depth, ``module`function`` and
the address of its first instruction, newest call first.  A call entered
before its tree began is marked ``(untraced start)``.  With timestamps each
call shows its inclusive and exclusive time.
"""


def call_window(forest, count, offset, start=None):
    """Calls newest first: ``count`` of them from ``offset`` calls back (or from a continuation)."""
    calls = forest.calls()
    newest = len(calls) - 1 - (offset if start is None else start)
    chosen = [calls[k] for k in range(newest, -1, -1)][: count if count is not None else None]
    shown = (offset if start is None else start) + len(chosen)
    return chosen, shown if shown < len(calls) else None


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
    return symbolizer.locate(call.address).function_label if call.address is not None else "(no instruction)"


def text_lines(decoded, calls, flat, symbolizer, conversion):
    rows = []
    for call in calls:
        indent = "" if flat else "  " * call.depth
        label = call_label(symbolizer, call) + (" (untraced start)" if call.untraced_start else "")
        rows.append((f"[{call.first}]", indent + label, call))
    index_width = max((len(r[0]) for r in rows), default=0)
    label_width = max((len(r[1]) for r in rows), default=0)
    unit = "ns" if conversion else "ticks"
    lines = []
    for index_text, label, call in rows:
        address = f"0x{call.address:x}" if call.address is not None else "-"
        line = f"  {index_text:<{index_width}}  {label:<{label_width}}  {address}"
        times = timing(decoded, call, conversion) if decoded.has_timestamps else None
        if times:
            line += f"  inclusive {times[0]} {unit}, exclusive {times[1]} {unit}"
        lines.append(line)
    return lines


def json_calls(decoded, calls, symbolizer, conversion):
    objects = []
    for call in calls:
        location = symbolizer.locate(call.address) if call.address is not None else None
        entry = {
            "id": call.first,
            "lastId": call.last,
            "depth": call.depth,
            "module": location.module if location else None,
            "symbol": location.function if location else None,
            "loadAddress": f"0x{call.address:x}" if call.address is not None else None,
            "untracedStart": call.untraced_start,
        }
        times = timing(decoded, call, conversion) if decoded.has_timestamps else None
        if times:
            entry["inclusive"], entry["exclusive"] = times
        objects.append(entry)
    return objects
