"""``pt dump --instructions``: items of a thread's trace as text or JSON.

Text follows the processor-trace RFC: ``[index] 0xADDRESS : disassembly``, a
``module`function`` line whenever the function changes, ``; at file:line``
when the source line changes, and ``[index] error CODE. 'text'`` for gaps.
``--kind`` adds LLDB's control-flow kind before the disassembly; ``--only-events``
lists the events alone, each as ``[index] (event) ...`` with the item it precedes.
"""

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from ..decode.cursor import TraceCursor

KIND_WIDTH = 12  # LLDB pads the kind to this width ("cond jump   ")


@dataclass(frozen=True)
class InstructionView:
    """What to show: a window of items and how to print each."""

    count: int | None  # None: every item
    offset: int
    forwards: bool
    time: bool
    raw: bool
    events: bool


def window(decoded, expander, view, start=None):
    """The items to show and the index to continue from; ``start`` (a continuation) overrides offset."""
    cursor = TraceCursor(decoded, expander, forwards=view.forwards)
    if start is None:
        start = view.offset if view.forwards else decoded.item_count - 1 - view.offset
    if not 0 <= start < decoded.item_count:  # (the cursor would read a negative start from the end)
        return [], None
    cursor.seek(start)
    items = list(cursor.items(limit=view.count))
    return items, cursor.index if cursor.has_value else None


def event_window(decoded, view, at_item=None, start=None):
    """The events to show, in display order, and the event number to continue from.

    Events are numbered in trace order.  ``at_item`` starts at the events of that item (--id);
    ``view.offset`` skips that many events; ``start`` (a continuation) overrides both.
    """
    events = decoded.events
    if start is None:
        items = [event.index for event in events]
        if view.forwards:
            first = 0 if at_item is None else bisect_left(items, at_item)
            start = first + view.offset
        else:
            last = len(events) - 1 if at_item is None else bisect_right(items, at_item) - 1
            start = last - view.offset
    if not 0 <= start < len(events):
        return [], None
    step = 1 if view.forwards else -1
    stop = len(events) if view.forwards else -1
    if view.count is not None:
        stop = min(stop, start + view.count) if view.forwards else max(stop, start - view.count)
    shown = [events[k] for k in range(start, stop, step)]
    return shown, stop if 0 <= stop < len(events) else None


def event_text(event, tsc=None, conversion=None):
    if event.type.name == "TICK":
        return f"tick: time is {timestamp_text(tsc, conversion)}"
    where = f" at 0x{event.ip:x}" if event.ip is not None else ""
    return f"{event.type.name.lower()}{where}"


def gap_code(gap):
    return gap.code if gap.code < 0 else -gap.code


def timestamp_text(tsc, conversion):
    if tsc is None:
        return "no time"
    return f"{conversion.to_ns(tsc)} ns" if conversion else f"tsc {tsc}"


def _prefix(index, view, tsc, conversion):
    return f"[{index}: {timestamp_text(tsc, conversion)}]" if view.time else f"[{index}]"


def event_lines(events, view, decoded, conversion):
    """``--only-events`` as text: ``[index] (event) ...``, index being the item the event came before."""
    return [
        f"  {_prefix(event.index, view, _event_time(decoded, event), conversion)} (event) {event_text(event)}"
        for event in events
    ]


def json_events(events, view, decoded, conversion):
    objects = []
    for event in events:
        entry = {"id": event.index, "event": event.type.name.lower()}
        if event.ip is not None:
            entry["ip"] = f"0x{event.ip:x}"
        if view.time:
            tsc = _event_time(decoded, event)
            entry["timestamp"] = None if tsc is None else (conversion.to_ns(tsc) if conversion else tsc)
        objects.append(entry)
    return objects


def _event_time(decoded, event):
    return decoded.timestamp(event.index) if decoded.has_timestamps else None


def text_lines(items, view, symbolizer, conversion, kinds=None):
    """The RFC's text form of ``items`` (already in display order); ``kinds``: a ControlFlowKinds for --kind."""
    lines, last_label, last_source = [], None, None
    for item in items:
        events = [f"    (event) {event_text(e, item.tsc, conversion)}" for e in item.events] if view.events else []
        if view.forwards:
            lines += events
        prefix = _prefix(item.index, view, item.tsc, conversion)
        kind = f"{kinds[item.address]:<{KIND_WIDTH}}" if kinds is not None and item.gap is None else ""
        if item.gap is not None:
            lines.append(f"  {prefix} error {gap_code(item.gap)}. '{item.gap.text}'")
            last_label = last_source = None
        elif view.raw:
            lines.append(f"  {prefix} 0x{item.address:x} {kind}".rstrip())
        else:
            location = symbolizer.locate(item.address)
            if location.function_label != last_label:
                lines.append(f"  {location.function_label}")
                last_label = location.function_label
            text = f"  {prefix} 0x{item.address:x} : {kind}{location.mnemonic:<6} {location.operands}".rstrip()
            if location.source and location.source != last_source:
                text += f"    ; at {location.source}"
            last_source = location.source or last_source
            lines.append(text)
        if not view.forwards:
            lines += events
    return lines


def json_items(items, view, symbolizer, conversion, kinds=None):
    """The JSON form: one object per item (and per event with --events)."""
    objects = []
    for item in items:
        events = [
            {"id": item.index, "event": e.type.name.lower(), **({"ip": f"0x{e.ip:x}"} if e.ip is not None else {})}
            for e in item.events
        ] if view.events else []  # fmt: skip
        if view.forwards:
            objects += events
        if item.gap is not None:
            entry = {"id": item.index, "error": item.gap.text, "code": gap_code(item.gap)}
        elif view.raw:
            entry = {"id": item.index, "loadAddress": f"0x{item.address:x}"}
        else:
            location = symbolizer.locate(item.address)
            entry = {
                "id": item.index,
                "loadAddress": f"0x{item.address:x}",
                "module": location.module,
                "symbol": location.function,
                "mnemonic": location.mnemonic,
                "operands": location.operands,
                "source": location.file,
                "line": location.line,
            }
        if kinds is not None and item.gap is None:
            entry["controlFlowKind"] = kinds[item.address]
        if view.time:
            entry["timestamp"] = None if item.tsc is None else (conversion.to_ns(item.tsc) if conversion else item.tsc)
        objects.append(entry)
        if not view.forwards:
            objects += events
    return objects
