"""``pt find``: where in a thread's history a function was called, a line ran, an address executed, or some
bytes were written or read."""

import lldb

from ..debugger import histories
from ..errors import LldbTraceError
from ..history import queries
from ..option_table import TID, Option
from ..values.accesses import MAX_SIZE, accesses, in_shared_mapping
from ..values.process_values import values_of
from ..views.accesses import accesses_json, accesses_text, shown_accesses
from ..views.matches import matches_json, matches_text, shown_matches
from .base import TidOptionCommand, address_of, help_paragraphs, parse_number

DEFAULT_COUNT = 20


SHARED_NOTE = (
    "note: these bytes are in a shared mapping, or in memory the known states map nowhere: another process, this"
    " one through another mapping of the same memory, or a mapping made and removed within the trace may change"
    " them unseen; their values are known only where a known state gives them"
)


class FindCommand(TidOptionCommand):
    name = "find"
    short_help = "List where in the trace a function was called, a source line ran or an address executed."
    long_help = help_paragraphs(
        "Usage: pt find --function NAME | --line FILE:LINE | --address ADDR | --write ADDR | --read ADDR [--size N]"
        " [-c N] [-t TID] [--json]",
        "Searches the whole history of the selected thread (or -t TID) and lists the matching executions newest"
        " first: the item index ('pt goto INDEX' stands there), the call depth, the timestamp when the trace has"
        " them, and the function. --function lists the calls of the function, at its first instruction: calls"
        " that ran it or went through its PLT stub (an IFUNC's variant, such as __strcpy_avx2 for strcpy);"
        " --line the executions of the line's first instruction; --address those of one instruction. -c N shows"
        f" the newest N (default {DEFAULT_COUNT}; 0: all).",
        "--write ADDR lists the instructions that wrote any of the --size N bytes (default 1) at ADDR (an address"
        " or an expression, e.g. &student->course), with the old and new values where they are known; --read"
        " those that read them. An instruction whose address is not known at its position may have touched them:"
        " it is listed after them ('may have'). ADDR's bytes are looked for as the selected thread saw them.",
    )

    options = (
        TID.with_help("The thread to search (default: the selected thread)."),
        Option("f", "function", "Calls of this function.", "FunctionName"),
        Option("l", "line", "Executions of this source line (FILE:LINE).", "FileLineColumn"),
        Option("a", "address", "Executions of the instruction at this address (or an expression: $pc, a function).",
               "AddressOrExpression"),
        Option("w", "write", "Instructions that wrote these bytes (an address or an expression).",
               "AddressOrExpression"),
        Option("r", "read", "Instructions that read these bytes.", "AddressOrExpression"),
        Option("s", "size", "How many bytes from the --write/--read address (default 1).", "ByteSize", "number",
               default=1, least=1),
        Option("c", "count", f"How many to list, newest first (default {DEFAULT_COUNT}; 0: all).", "Count", "number",
               default=DEFAULT_COUNT),
        Option("j", "json", "Print JSON."),
    )  # fmt: skip

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if args:
            raise LldbTraceError(
                f"'{self.full_name}' takes options only: --function NAME, --line FILE:LINE, --address ADDR, --write"
                " ADDR or --read ADDR"
            )
        target = debugger.GetSelectedTarget()
        trace = histories.trace_of(target)
        tid = self._tid(target, trace)
        history = histories.history_of(target, tid, trace)
        count = int(parser.count)
        if parser.was_set("write") or parser.was_set("read"):
            self._accesses(parser, target, trace, tid, history, count, result)
            return
        function, line, address = _search(parser, target)
        matches = queries.find(history, history.symbolizer, function, line, address, limit=count + 1 if count else None)
        more = bool(count) and len(matches) > count
        shown = shown_matches(matches[:count] if count else matches, history.symbolizer)
        if parser.was_set("json"):
            result.AppendMessage(matches_json(shown))
        else:
            what = function or (f"{line[0]}:{line[1]}" if line else f"0x{address:x}")
            result.AppendMessage(matches_text(shown, f"{what} in the trace of thread tid {tid}", more))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)

    def _accesses(self, parser, target, trace, tid, history, count, result):
        if sum(parser.was_set(name) for name in ("function", "line", "address", "write", "read")) != 1:
            raise LldbTraceError("give exactly one of --function, --line, --address, --write and --read")
        writes = parser.was_set("write")
        size = int(parser.size)
        if not 0 < size <= MAX_SIZE:
            raise LldbTraceError(f"--size {size}: give a number of bytes from 1 to {MAX_SIZE}")
        address = address_of(target, parser.write if writes else parser.read)
        values = values_of(trace).thread(tid)
        if values is None:
            raise LldbTraceError(f"thread {tid} has no decoded instructions")
        found = accesses(values, address if writes else None, None if writes else address, size, None)
        exact = [k for k, access in enumerate(found) if access.exact]
        more = bool(count) and len(exact) > count
        if more:  # -c counts the instructions that did access the bytes, not those that may have
            found = found[: exact[count]]
        shown = shown_accesses(found, history.pc_at, history.symbolizer, (address, size))
        if parser.was_set("json"):
            result.AppendMessage(accesses_json(shown))
        else:
            what = f"{'wrote' if writes else 'read'} the {size} byte(s) at 0x{address:x} (thread tid {tid})"
            result.AppendMessage(accesses_text(shown, what, more))
            if in_shared_mapping(values, address, size):
                result.AppendMessage(SHARED_NOTE)
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


def _search(parser, target):
    """``(function, (file, line), address)`` with exactly one set, from the options."""
    given = [name for name in ("function", "line", "address") if parser.was_set(name)]
    if len(given) != 1:
        raise LldbTraceError(
            "give exactly one of --function NAME, --line FILE:LINE, --address ADDR, --write ADDR and --read ADDR"
        )
    if parser.was_set("size"):
        raise LldbTraceError("--size goes with --write or --read: it counts the bytes they look at")
    if given == ["function"]:
        return parser.function, None, None
    if given == ["line"]:
        file, _, number = parser.line.rpartition(":")
        if not file or parse_number(number) is None or parse_number(number) == 0:
            raise LldbTraceError(f"--line '{parser.line}': give FILE:LINE, e.g. main.c:42")
        return None, (file, parse_number(number)), None
    return None, None, address_of(target, parser.address)
