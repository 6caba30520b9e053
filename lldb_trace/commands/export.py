"""``pt export``: the calls of the trace as a file for a timeline or flame graph viewer (lldb_trace.export)."""

import lldb

from ..api import ThreadTrace
from ..debugger.symbolizer import LldbSymbolizer, disassembly_flavor
from ..errors import LldbTraceError
from ..export import export
from .base import TidOptionCommand, help_paragraphs
from .dump import chosen_tids, selected_trace

FORMATS = (
    ("chrome", "Chrome Trace Event JSON: a timeline for ui.perfetto.dev or chrome://tracing"),
    ("perfetto", "a Perfetto protobuf trace for ui.perfetto.dev"),
    ("folded", "folded stacks for flamegraph.pl, inferno or speedscope"),
    ("speedscope", "speedscope's JSON: a flame chart per thread"),
)
WEIGHTS = (
    ("instructions", "item indices as the axis; instructions as folded stacks' weights"),
    ("time", "nanoseconds (TSC ticks without a conversion): needs a trace with timestamps"),
)


class ExportCommand(TidOptionCommand):
    name = "export"
    short_help = "Write the trace's calls as a timeline (Chrome JSON, Perfetto) or a flame graph (folded, speedscope)."
    long_help = help_paragraphs(
        "Usage: pt export --format chrome|perfetto|folded|speedscope PATH [-t TID ...] [--all-threads]"
        " [--range FROM:TO] [--min-duration D] [--weight instructions|time] [--force]",
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

    def setup_command_definition(self):
        parser = self.get_parser()
        self.add_choice_option("F", "format", "What to write.", FORMATS, None)
        self.add_tid_option("A thread to export (repeat for several; default: the selected thread).")
        parser.add_option("a", "all-threads", "Export every traced thread of the target.", default=None)
        parser.add_option("r", "range", "Only items FROM:TO of each thread (e.g. 1000:2000, -5000:).", default=None,
                          value_type=lldb.eArgTypeValue)  # fmt: skip
        parser.add_option("m", "min-duration", "Leave out calls shorter than this (100 instructions, or 10us).",
                          default=None, dest="min_duration", value_type=lldb.eArgTypeValue)  # fmt: skip
        self.add_choice_option("w", "weight", "The axis and the folded weights.", WEIGHTS, None)
        parser.add_option("f", "force", "Replace PATH if it exists.", default=None)
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypeFilename, repeat="plain")])

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if len(args) != 1:
            raise LldbTraceError("give one file to write: pt export --format FORMAT PATH")
        if not parser.was_set("format"):
            raise LldbTraceError("give --format chrome, perfetto, folded or speedscope")
        if parser.was_set("all-threads") and self.tids:
            raise LldbTraceError("give either -t TID or --all-threads, not both")
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = process_trace.tids if parser.was_set("all-threads") else chosen_tids(process_trace, target, self.tids)
        symbolizer = LldbSymbolizer(target, process_trace.memory, disassembly_flavor(debugger))
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
