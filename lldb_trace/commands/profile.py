"""``pt profile``: where a thread's history spent its instructions and time, per function, source line or module."""

import lldb

from ..debugger import histories
from ..errors import LldbTraceError
from ..export.output import staged
from ..given_paths import given_path
from ..option_table import RANGE, TID, Option
from ..profile import GROUPINGS, SORTS, profile
from ..views.profile import profile_json, profile_text
from .base import TidOptionCommand, choice, help_paragraphs, listed
from .selection import chosen_tids, selected_trace

DEFAULT_COUNT = 20


class ProfileCommand(TidOptionCommand):
    name = "profile"
    short_help = "Profile a thread's history: calls, instructions and time per function, source line or module."
    long_help = help_paragraphs(
        "Usage: pt profile [-t TID] [--by function|line|module] [--range FROM:TO] [-c N] [--sort ORDER] [--json]"
        " [--file PATH]",
        "Counts what the selected thread (or -t TID) ran, over its whole trace or items FROM to TO (--range, as"
        " 'pt export' takes it: either side may be left out, negative counts from the end), from its call tree."
        " Each row has: calls, the calls made in the range (its call instruction and the function's first"
        " instruction both in it; a tail call or a signal handler's run counts as a call, a function already"
        " running when the range begins does not); exclusive, the instructions run in the row itself, with their"
        " share of the range; inclusive, the instructions run while the row is on the stack, each counted once"
        " even when the row is on the stack several times (recursion), with their share; and, when the trace has"
        " timestamps, exclusive and inclusive time in ns (TSC ticks without a conversion), an instruction lasting"
        " until the next item's time. A trace without timing has no time columns.",
        "--by function: a function's exclusive instructions are those of its own frames (a PLT stub's count in"
        " the function it reached); inclusive, those of its outermost frames. --by line: exclusive, the"
        " instructions at the line's addresses; inclusive, those plus everything the calls made from the line"
        " ran; calls, the calls made from the line. --by module: exclusive, the instructions at the module's"
        " addresses; inclusive, those plus everything its functions' frames ran (callbacks into other modules"
        " included); calls, the calls of its functions. Exclusive counts add up to the range's instruction"
        " count, as the totals line shows.",
        "--sort orders the rows, largest first: by exclusive instructions (the default), inclusive, calls, time"
        " (exclusive time) or inclusive-time; name sorts by name (lines by file and line number)."
        f" -c N shows the first N rows (default {DEFAULT_COUNT}; 0: all). --json prints every field of the rows"
        " shown, the totals, the range and the unit of time (null without timing). --file PATH writes the"
        " output to PATH instead (whole or not at all).",
    )

    options = (
        TID.with_help("The thread to profile (default: the selected thread)."),
        Option("b", "by", "What a row is.", choices=tuple(GROUPINGS.items()), default="function"),
        RANGE,
        Option("c", "count", f"How many rows to show (default {DEFAULT_COUNT}; 0: all).", "Count", "number",
               default=DEFAULT_COUNT),
        # Not a choice option: LLDB's parser refuses "inclusive" as a prefix of "inclusive-time" too.
        Option("s", "sort", f"The order of the rows: {listed(SORTS)} (default: exclusive).", "SortOrder",
               default="exclusive"),
        Option("j", "json", "Print JSON."),
        Option("F", "file", "Write the output to this file.", "Filename"),
    )  # fmt: skip

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if len(self.tids) > 1:
            raise LldbTraceError("pt profile profiles one thread: give -t once")
        target, process_trace = selected_trace(debugger, exe_ctx)
        tid = chosen_tids(process_trace, target, self.tids)[0]
        if not process_trace.has_trace(tid):
            raise LldbTraceError(f"thread {tid} has no trace to profile")
        thread = histories.history_of(target, tid, process_trace).thread  # its symbolizer's lines are cached
        by, sort = parser.by, choice(parser.sort, SORTS, "sort")
        made = profile(thread, by, parser.range if parser.was_set("range") else None)
        rows = made.sorted_rows(sort)
        count = int(parser.count)
        shown = rows[:count] if count else rows
        text = profile_json(made, shown, sort) if parser.was_set("json") else profile_text(made, shown)
        if parser.was_set("file"):
            _write(parser.file, text)
            result.AppendMessage(f"wrote the profile of thread {tid} to {parser.file}")
        else:
            result.AppendMessage(text)
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def _write(path, text):
    """Write ``text`` to ``path`` whole or not at all (a staged file renamed over it)."""
    path = given_path(path, "the file to write the profile to (--file)").expanduser()
    if not path.parent.is_dir():
        raise LldbTraceError(f"cannot write {path}: the folder {path.parent} does not exist")
    with staged(path) as out:
        out.write(text + "\n")
