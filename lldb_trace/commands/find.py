"""``pt find``: where in a thread's history a function was called, a line ran or an address executed."""

import lldb

from ..debugger import histories
from ..errors import LldbTraceError
from ..history import queries
from ..option_table import TID, Option
from ..views.matches import matches_json, matches_text, shown_matches
from .base import TidOptionCommand, help_paragraphs, parse_number

DEFAULT_COUNT = 20


class FindCommand(TidOptionCommand):
    name = "find"
    short_help = "List where in the trace a function was called, a source line ran or an address executed."
    long_help = help_paragraphs(
        "Usage: pt find --function NAME | --line FILE:LINE | --address ADDR [-c N] [-t TID] [--json]",
        "Searches the whole history of the selected thread (or -t TID) and lists the matching executions newest"
        " first: the item index ('pt goto INDEX' stands there), the call depth, the timestamp when the trace has"
        " them, and the function. --function lists the calls of the function, at its first instruction: calls"
        " that ran it or went through its PLT stub (an IFUNC's variant, such as __strcpy_avx2 for strcpy);"
        " --line the executions of the line's first instruction; --address those of one instruction. -c N shows"
        f" the newest N (default {DEFAULT_COUNT}; 0: all).",
    )

    options = (
        TID.with_help("The thread to search (default: the selected thread)."),
        Option("f", "function", "Calls of this function.", "FunctionName"),
        Option("l", "line", "Executions of this source line (FILE:LINE).", "FileLineColumn"),
        Option("a", "address", "Executions of the instruction at this address.", "AddressOrExpression"),
        Option("c", "count", f"How many to list, newest first (default {DEFAULT_COUNT}; 0: all).", "Count", "number",
               default=DEFAULT_COUNT),
        Option("j", "json", "Print JSON."),
    )  # fmt: skip

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if args:
            raise LldbTraceError(
                f"'{self.full_name}' takes options only: --function NAME, --line FILE:LINE or --address ADDR"
            )
        function, line, address = _search(parser)
        target = debugger.GetSelectedTarget()
        trace = histories.trace_of(target)
        tid = self._tid(target, trace)
        history = histories.history_of(target, tid, trace)
        count = int(parser.count)
        matches = queries.find(history, history.symbolizer, function, line, address, limit=count + 1 if count else None)
        more = bool(count) and len(matches) > count
        shown = shown_matches(matches[:count] if count else matches, history.symbolizer)
        if parser.was_set("json"):
            result.AppendMessage(matches_json(shown))
        else:
            what = function or (f"{line[0]}:{line[1]}" if line else f"0x{address:x}")
            result.AppendMessage(matches_text(shown, f"{what} in the trace of thread tid {tid}", more))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)

    def _tid(self, target, trace):
        if len(self.tids) > 1:
            raise LldbTraceError("pt find searches one thread: give -t once")
        if self.tids:
            return self.tids[0]
        thread = target.GetProcess().GetSelectedThread()
        if not thread.IsValid():
            raise LldbTraceError("no thread is selected: 'thread select N' or give -t TID")
        return thread.GetThreadID()


def _search(parser):
    """``(function, (file, line), address)`` with exactly one set, from the options."""
    given = [name for name in ("function", "line", "address") if parser.was_set(name)]
    if len(given) != 1:
        raise LldbTraceError("give exactly one of --function NAME, --line FILE:LINE and --address ADDR")
    if given == ["function"]:
        return parser.function, None, None
    if given == ["line"]:
        file, _, number = parser.line.rpartition(":")
        if not file or parse_number(number) is None or parse_number(number) == 0:
            raise LldbTraceError(f"--line '{parser.line}': give FILE:LINE, e.g. main.c:42")
        return None, (file, parse_number(number)), None
    address = parse_number(parser.address)
    if address is None:
        raise LldbTraceError(f"--address '{parser.address}': give an address in hex (0x401000) or decimal")
    return None, None, address
