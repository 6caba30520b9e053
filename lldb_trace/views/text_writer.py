"""The text writer of the thread dumps, in the processor-trace RFC's and native LLDB's form.

Instructions: ``[index] 0xADDRESS : disassembly``, a ``module`function`` line
whenever the function changes, ``; at file:line`` when the source line
changes, and ``[index] error CODE. 'text'`` for gaps; ``--kind`` adds LLDB's
control-flow kind before the disassembly.  Events alone: ``[index] (event)
...`` with the item each precedes.  Calls: ``[index]`` of the function's first
instruction (``pt find``'s and a breakpoint's index of the call), indentation by
depth (below the shallowest call shown), ``module`function`` and its address,
the stub it was called through where that says more, and its times.
"""

from .options import CALLS, EVENTS, INSTRUCTIONS, DumpOptions
from .shown import ThreadDump

KIND_WIDTH = 12  # LLDB pads the kind to this width ("cond jump   ")


def gap_code(gap):
    """The gap's libipt error code, negative as libipt returns it."""
    return gap.code if gap.code < 0 else -gap.code


def event_name(event):
    return event.type.name.lower()


def _time_text(time, wall_clock):
    if time is None:
        return "no time"
    return f"{time} ns" if wall_clock else f"tsc {time}"


def _event_text(event, time, wall_clock):
    """``tick: time is ...`` for a timestamp tick (``time``: the item's), else the event's name and ip."""
    if event.type.name == "TICK":
        return f"tick: time is {_time_text(time, wall_clock)}"
    where = f" at 0x{event.ip:x}" if event.ip is not None else ""
    return f"{event_name(event)}{where}"


_NOT_DECODED = "the trace before these is decoded when a command needs it, e.g. 'bt' or 'pt goto'"


class TextWriter:
    """Text of each ThreadDump (``thread``), joined into one document (``document``)."""

    def __init__(self, options: DumpOptions) -> None:
        self.options = options

    def document(self, chunks: list[str]) -> str:
        return "\n".join(chunks)

    def thread(self, dump: ThreadDump) -> str:
        lines = [f"pid: '{dump.pid}', tid: '{dump.tid}'"]
        if not dump.has_trace:
            lines.append("  (no trace for this thread)")
        elif not dump.shown:
            what = self.options.shown_name
            lines.append(f"  (no more {what})" if self.options.continuing else f"  (no {what})")
        elif self.options.mode == INSTRUCTIONS and dump.shown[0].item.index < 0:
            lines.append(f"  (numbered from the end, -1 being the last: {_NOT_DECODED})")
        write = {EVENTS: self._events, CALLS: self._calls}.get(self.options.mode, self._instructions)
        return "\n".join(lines + write(dump))

    def _prefix(self, index, time, wall_clock):
        return f"[{index}: {_time_text(time, wall_clock)}]" if self.options.time else f"[{index}]"

    def _instructions(self, dump):
        options, wall_clock = self.options, dump.wall_clock
        lines, last_label, last_source = [], None, None
        for shown in dump.shown:
            item = shown.item
            events = (
                [f"    (event) {_event_text(e, shown.time, wall_clock)}" for e in item.events] if options.events else []
            )
            if options.forwards:
                lines += events
            prefix = self._prefix(item.index, shown.time, wall_clock)
            kind = f"{shown.kind:<{KIND_WIDTH}}" if shown.kind is not None else ""
            if item.gap is not None:
                lines.append(f"  {prefix} error {gap_code(item.gap)}. '{item.gap.text}'")
                last_label = last_source = None
            elif options.raw:
                lines.append(f"  {prefix} 0x{item.address:x} {kind}".rstrip())
            else:
                location = shown.location
                if location.function_label != last_label:
                    lines.append(f"  {location.function_label}")
                    last_label = location.function_label
                text = f"  {prefix} 0x{item.address:x} : {kind}{location.mnemonic:<6} {location.operands}".rstrip()
                if location.source and location.source != last_source:
                    text += f"    ; at {location.source}"
                last_source = location.source or last_source
                lines.append(text)
            if not options.forwards:
                lines += events
        return lines

    def _events(self, dump):
        return [
            f"  {self._prefix(shown.event.index, shown.time, dump.wall_clock)} (event) "
            f"{_event_text(shown.event, shown.time, dump.wall_clock)}"
            for shown in dump.shown
        ]

    def _calls(self, dump):
        base = min((shown.call.depth for shown in dump.shown), default=0)
        indent = (lambda shown: "") if self.options.flat else (lambda shown: "  " * (shown.call.depth - base))
        rows = [(f"[{shown.call.entered}]", indent(shown) + shown.label, shown) for shown in dump.shown]
        index_width = max((len(row[0]) for row in rows), default=0)
        label_width = max((len(row[1]) for row in rows), default=0)
        unit = "ns" if dump.wall_clock else "ticks"
        lines = []
        for index_text, label, shown in rows:
            address = f"0x{shown.entry:x}" if shown.entry is not None else "-"
            line = f"  {index_text:<{index_width}}  {label:<{label_width}}  {address}"
            if shown.stub_note:
                line += f"  ({shown.stub_note})"
            if shown.timing:
                line += f"  inclusive {shown.timing[0]} {unit}, exclusive {shown.timing[1]} {unit}"
            elif shown.timing == ():
                line += "  (shorter than the trace's timing resolution)"
            lines.append(line)
        return lines
