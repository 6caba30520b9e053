"""``pt dump`` (and ``trace dump``): the LLDB side of the views (views/) of a loaded or live trace.

What is LLDB's business stays here: the options as LLDB parses them, which
target's trace and which threads, where Enter continues, the LLDB symbolizer,
and handing the text to LLDB (or to --file).  What a dump shows, and what its
options mean, is the views' business, shared with ``lldb-trace dump``.
"""

import lldb

from ..debugger.histories import history_position
from ..debugger.symbolizer import LldbSymbolizer, disassembly_flavor
from ..errors import LldbTraceError
from ..given_paths import given_path
from ..option_table import DUMP_OPTIONS
from ..traced_thread import TracedThread
from ..views import INFO, Continuation, dump_options, dump_thread, render, render_info, session_info
from .base import TidOptionCommand, help_paragraphs
from .selection import chosen_tids, selected_trace

_INSTRUCTION_HELP = (
    "--instructions (-i): the last COUNT items (-c, default 10), starting OFFSET items back from the end (-o),"
    " newest first. An instruction is '[index] 0xADDRESS : disassembly', after a 'module`function' line whenever"
    " the function changes and with '; at file:line' whenever the source line changes; a gap (a decode error:"
    " overflow, missing image, corrupt packets) is \"[index] error CODE. 'text'\". Indices are stable: 0 is the"
    " oldest item.\n"
    "  --forwards: oldest first, OFFSET counted from the beginning.\n"
    "  --id N: start at item N (OFFSET then counts from there).\n"
    "  --all: every item, instead of COUNT.\n"
    "  --time: each item's timestamp, '[index: time]': wall-clock ns when the bundle has tscPerfZeroConversion,"
    " else the TSC.\n"
    "  --raw: addresses only.\n"
    "  --kind: each instruction's control-flow kind, as LLDB names it (call, return, jump, cond jump; far call,"
    " far return and far jump where the thread entered or left the kernel, as a syscall does).\n"
    "  --events: the trace's events (enabled, disabled, overflow, exec mode, interrupts, paging, timestamp"
    " ticks) between the items."
)
_EVENTS_HELP = (
    "--only-events (-E): the events alone, '[index] (event) ...', index being the item the event came before."
    " -c, -o, --id, --forwards, --all and --time work as with --instructions, counting events."
)
_CALLS_HELP = (
    "--function-calls (-C): the call tree in execution order, callers above their callees: '[first index]',"
    " indentation by depth, 'module`function' of the function that ran and its address. A call through a PLT stub"
    " is named by the library function it reached, followed by '(via prog`symbol stub for: name, bound lazily)'"
    " where the names differ or ld.so bound the stub on that call. A gap starts a new tree; a caller the trace"
    " returned into without seeing its call is '(untraced start)', named by where the trace returned. With"
    " timestamps, each call shows its inclusive and exclusive time. The last COUNT calls (-c, default 10), OFFSET"
    " calls back from the end (-o); --all shows every call. Enter continues towards older calls (newer ones with"
    " --forwards).\n"
    "  --forwards: the first COUNT calls, OFFSET counted from the beginning.\n"
    "  --id N: the window ends at the innermost call holding item N (starts there with --forwards).\n"
    "  --newest-first: newest call first, callees above their callers.\n"
    "  --module GLOB, --function GLOB: only calls of functions in modules whose file name matches ('libm.so*'), or"
    " whose name or PLT stub's name matches ('str*'). Shell-style globs, case-sensitive; COUNT and OFFSET count"
    " the calls that match.\n"
    "  --flat: one call per line, no hierarchy."
)


class DumpCommand(TidOptionCommand):
    name = "dump"
    short_help = "Show the selected target's trace: session info, instructions, events or the call tree."
    long_help = help_paragraphs(
        "Shows the trace of the selected target: a bundle loaded with 'trace load', or a live process traced with"
        " 'pt start'. 'trace dump' and 'thread trace dump info|instructions|function-calls' run this command.",
        "Without --instructions or --function-calls: the session info. The trace technology and CPU, every module"
        " (original path, file read, load address, size, uuid) and each thread given with -t (default: the"
        " selected thread): its trace file and size and, once decoded, the instruction, error and event counts,"
        " the decode time and the memory used. --verbose adds the bundle file.",
        _INSTRUCTION_HELP,
        _EVENTS_HELP,
        _CALLS_HELP,
        "Every dump: -t TID picks a thread (repeat it for several), --json prints JSON and --file PATH writes to"
        " PATH. Pressing Enter after a dump continues where it stopped (--continue). Numbers are decimal, hex"
        " (0x1f) or octal (010), as LLDB reads them. Disassembly follows target.x86-disassembly-flavor (AT&T"
        " unless it is 'intel').",
    )

    options = DUMP_OPTIONS

    def __init__(self, debugger, internal_dict):
        super().__init__(debugger, internal_dict)
        self.continuations = {}  # (process id, tid, mode, forwards) -> where the next dump starts

    def get_repeat_command(self, command):
        """Enter after a dump continues it: the same command plus --continue (LLDB passes "dump ...")."""
        command = command if command.startswith("pt ") else f"pt {command}"
        modes = (" --instructions", " --only-events", " --function-calls")
        if any(mode in command for mode in modes) or _has_short(command, "iEC"):
            return command if " --continue" in command else command + " --continue"
        return None

    def run(self, debugger, args, exe_ctx, result):
        if args:
            result.SetError(f"unexpected argument '{args[0]}': give threads with -t TID")
            return
        parser = self.get_parser()
        options = dump_options(self.given_options())
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = chosen_tids(process_trace, target, self.tids)
        if options.mode == INFO:
            _emit(result, render_info(lldb_session_info(process_trace, target, tids, options.verbose), options), parser)
            return
        symbolizer = LldbSymbolizer(target, process_trace.module_bytes, disassembly_flavor(debugger))
        dumps = [self._dump_thread(target, TracedThread(process_trace, tid, symbolizer), options) for tid in tids]
        _emit(result, render(dumps, options), parser)

    def _dump_thread(self, target, thread, options):
        """One thread's dump, continuing the previous one of the same kind with --continue (Enter)."""
        key = (target.GetProcess().GetUniqueID(), thread.tid, options.mode, options.forwards)
        continued = options.continuing and key in self.continuations
        dump = dump_thread(thread, options, Continuation(self.continuations[key]) if continued else None)
        self.continuations[key] = dump.next_start
        return dump


def lldb_session_info(process_trace, target, tids, verbose):
    """The session info of ``tids``, numbering threads as LLDB does."""
    process = target.GetProcess()
    symbolizer = LldbSymbolizer(target, process_trace.module_bytes, disassembly_flavor(target.GetDebugger()))
    threads = [TracedThread(process_trace, tid, symbolizer) for tid in tids]

    def thread_index(tid):
        thread = process.GetThreadByID(tid)
        return thread.GetIndexID() if thread.IsValid() else None

    return session_info(process_trace, threads, verbose, thread_index, lambda tid: history_position(target, tid))


def _has_short(command, letters):
    return any(word.startswith("-") and not word.startswith("--") and set(word[1:]) & set(letters)
               for word in command.split())  # fmt: skip


def _emit(result, text, parser):
    path = given_path(parser.file, "the file to write the dump to (--file)") if parser.was_set("file") else None
    if path:
        try:
            with open(path, "w") as out:
                out.write(text + "\n")
        except OSError as error:
            raise LldbTraceError(f"cannot write {path}: {error.strerror}") from None
        result.AppendMessage(f"wrote {path}")
    else:
        result.AppendMessage(text)
    result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
