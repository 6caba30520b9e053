"""``pt dump --instructions``: items of a thread's trace as text or JSON.

Text follows the processor-trace RFC: ``[index] 0xADDRESS : disassembly``, a
``module`function`` line whenever the function changes, ``; at file:line``
when the source line changes, and ``[index] error CODE. 'text'`` for gaps.
"""

from dataclasses import dataclass

from ..decode.cursor import TraceCursor


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
    if not cursor.seek(start):
        return [], None
    items = list(cursor.items(limit=view.count))
    return items, cursor.index if cursor.has_value else None


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


def text_lines(items, view, symbolizer, conversion):
    """The RFC's text form of ``items`` (already in display order)."""
    lines, last_label, last_source = [], None, None
    for item in items:
        events = [f"    (event) {event_text(e, item.tsc, conversion)}" for e in item.events] if view.events else []
        if view.forwards:
            lines += events
        prefix = f"[{item.index}: {timestamp_text(item.tsc, conversion)}]" if view.time else f"[{item.index}]"
        if item.gap is not None:
            lines.append(f"  {prefix} error {gap_code(item.gap)}. '{item.gap.text}'")
            last_label = last_source = None
        elif view.raw:
            lines.append(f"  {prefix} 0x{item.address:x}")
        else:
            location = symbolizer.locate(item.address)
            if location.function_label != last_label:
                lines.append(f"  {location.function_label}")
                last_label = location.function_label
            text = f"  {prefix} 0x{item.address:x} : {location.mnemonic:<6} {location.operands}".rstrip()
            if location.source and location.source != last_source:
                text += f"    ; at {location.source}"
            last_source = location.source or last_source
            lines.append(text)
        if not view.forwards:
            lines += events
    return lines


def json_items(items, view, symbolizer, conversion):
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
        if view.time:
            entry["timestamp"] = None if item.tsc is None else (conversion.to_ns(item.tsc) if conversion else item.tsc)
        objects.append(entry)
        if not view.forwards:
            objects += events
    return objects
