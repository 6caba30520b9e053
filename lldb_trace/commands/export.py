"""``pt export``: the calls of the trace as a file for a timeline or flame graph viewer (lldb_trace.export)."""

import lldb

from ..api import ThreadTrace
from ..debugger.symbolizer import LldbSymbolizer, disassembly_flavor
from ..errors import LldbTraceError
from ..export import FORMATS, WEIGHTS, export
from ..option_table import RANGE, TID, Option
from .base import TidOptionCommand, help_paragraphs, listed
from .selection import chosen_tids, selected_trace


class ExportCommand(TidOptionCommand):
    name = "export"
    short_help = "Write the trace's calls as a timeline (Chrome JSON, Perfetto) or a flame graph (folded, speedscope)."
    long_help = help_paragraphs(
        f"Usage: pt export --format {'|'.join(FORMATS)} PATH [-t TID ...] [--all-threads]"
        f" [--range FROM:TO] [--min-duration D] [--weight {'|'.join(WEIGHTS)}] [--force]",
        "Writes every call of the selected thread (or each -t TID, or --all-threads) to PATH. chrome: a Trace Event"
        " JSON timeline, one complete event per call, one track per thread, gaps as instant events (timestamps in"
        " microseconds with their fraction). perfetto: the same timeline as a Perfetto protobuf trace (a slice per"
        " call). folded: 'caller;callee;leaf weight' lines for flame graphs, the weight being the instructions the"
        " leaf executed itself (nanoseconds with --weight time); with several threads each stack starts with its"
        " thread. speedscope: an evented profile per thread.",
        "The axis is time (nanoseconds since the trace's first timestamp) when every exported thread has"
        " timestamps, else item indices, shown as one microsecond per item (each file's metadata says which);"
        " folded stacks weigh instructions unless --weight time. --weight instructions puts the timelines on item"
        " indices too.",
        "--range FROM:TO exports items FROM to TO of each thread (indices as 'trace dump --instructions' shows them;"
        " either side may be left out, negative counts from the end). --min-duration D leaves out calls shorter"
        " than D on the axis: instructions, or nanoseconds on a time axis, where 10us, 2ms or 1s also work; in"
        " folded stacks a call left out counts in its caller. The file is written whole or not at all; an"
        " existing PATH is replaced only with --force.",
    )

    options = (
        Option("F", "format", "What to write.", choices=tuple((name, form.about) for name, form in FORMATS.items())),
        TID.with_help("A thread to export (repeat for several; default: the selected thread)."),
        Option("a", "all-threads", "Export every traced thread of the target."),
        RANGE.with_help("Only items FROM:TO of each thread (e.g. 1000:2000, -5000:)."),
        Option("m", "min-duration", "Leave out calls shorter than this (100 instructions, or 10us).", "Value"),
        Option("w", "weight", "The axis and the folded weights.", choices=tuple(WEIGHTS.items())),
        Option("f", "force", "Replace PATH if it exists."),
    )
    arguments = ("Filename", "plain")

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if len(args) != 1:
            raise LldbTraceError("give one file to write: pt export --format FORMAT PATH")
        if not parser.was_set("format"):
            raise LldbTraceError(f"give --format {listed(list(FORMATS))}")
        if parser.was_set("all-threads") and self.tids:
            raise LldbTraceError("give either -t TID or --all-threads, not both")
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = process_trace.tids if parser.was_set("all-threads") else chosen_tids(process_trace, target, self.tids)
        symbolizer = LldbSymbolizer(target, process_trace.module_bytes, disassembly_flavor(debugger))
        threads = [ThreadTrace(process_trace, tid, symbolizer) for tid in tids]
        done = export(
            threads,
            parser.format,
            args[0],
            item_range=parser.range if parser.was_set("range") else None,
            min_duration=parser.min_duration if parser.was_set("min-duration") else None,
            weight=parser.weight if parser.was_set("weight") else None,
            force=parser.was_set("force"),
        )
        result.AppendMessage(done.summary())
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
