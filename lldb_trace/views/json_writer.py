"""The JSON writer of the thread dumps: one object per item, event or call, as native LLDB's ``-j`` names them.

Items: ``id``, ``loadAddress``, ``module``, ``symbol``, ``mnemonic``,
``operands``, ``source``, ``line`` (gaps: ``id``, ``error``, ``code``).
Calls: ``id`` (the item of the function's first instruction, as the text
shows it), ``firstId`` and ``lastId`` (the call's items, a PLT stub's first),
``depth``, ``module``, ``symbol``, ``loadAddress``, ``untracedStart``, ``stub``
and ``lazyBinding``.  One
thread's dump is a list; several threads' are a list of those.
"""

import json

from .options import CALLS, EVENTS, DumpOptions
from .shown import ThreadDump
from .text_writer import event_name, gap_code


def _event_object(event):
    return {
        "id": event.index,
        "event": event_name(event),
        **({"ip": f"0x{event.ip:x}"} if event.ip is not None else {}),
    }


class JsonWriter:
    """JSON objects of each ThreadDump (``thread``), joined into one document (``document``)."""

    def __init__(self, options: DumpOptions) -> None:
        self.options = options

    def document(self, chunks: list[dict]) -> str:
        return json.dumps(chunks[0] if len(chunks) == 1 else chunks, indent=1)

    def thread(self, dump: ThreadDump) -> dict:
        write = {EVENTS: self._events, CALLS: self._calls}.get(self.options.mode, self._instructions)
        return write(dump)

    def _instructions(self, dump):
        options, objects = self.options, []
        for shown in dump.shown:
            item = shown.item
            events = [_event_object(event) for event in item.events] if options.events else []
            if options.forwards:
                objects += events
            if item.gap is not None:
                value = {"id": item.index, "error": item.gap.text, "code": gap_code(item.gap)}
            elif options.raw:
                value = {"id": item.index, "loadAddress": f"0x{item.address:x}"}
            else:
                location = shown.location
                value = {
                    "id": item.index,
                    "loadAddress": f"0x{item.address:x}",
                    "module": location.module,
                    "symbol": location.function,
                    "mnemonic": location.mnemonic,
                    "operands": location.operands,
                    "source": location.file,
                    "line": location.line,
                }
            if shown.kind is not None:
                value["controlFlowKind"] = shown.kind
            if options.time:
                value["timestamp"] = shown.time
            objects.append(value)
            if not options.forwards:
                objects += events
        return objects

    def _events(self, dump):
        objects = []
        for shown in dump.shown:
            value = _event_object(shown.event)
            if self.options.time:
                value["timestamp"] = shown.time
            objects.append(value)
        return objects

    def _calls(self, dump):
        objects = []
        for shown in dump.shown:
            call, location, stub = shown.call, shown.location, shown.stub
            value = {
                "id": call.entered,
                "firstId": call.first,
                "lastId": call.last,
                "depth": call.depth,
                "module": location.module if location else None,
                "symbol": location.function if location else None,
                "loadAddress": f"0x{shown.entry:x}" if shown.entry is not None else None,
                "untracedStart": call.untraced_start,
                "stub": {"module": stub.module, "symbol": stub.symbol_text, "loadAddress": f"0x{call.stub:x}"}
                if stub
                else None,
                "lazyBinding": call.lazy_binding,
            }
            if shown.timing:
                value["inclusive"], value["exclusive"] = shown.timing
            objects.append(value)
        return objects
