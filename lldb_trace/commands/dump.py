"""``pt dump`` (and ``trace dump``): what a loaded trace holds, per the RFC's session info."""

import json

import lldb

from ..debugger import registry
from ..errors import LldbTraceError
from ..x86.control_flow_kind import ControlFlowKinds
from . import dump_calls, dump_instructions, dump_options
from .base import TidOptionCommand, help_paragraphs
from .dump_info import format_info, session_info
from .symbols import Symbolizer, disassembly_flavor


class NoTraceError(LldbTraceError):
    """The selected target was not loaded from a trace."""


def selected_trace(debugger, exe_ctx):
    """The ProcessTrace of the command's target, or a one-line error saying how to get one."""
    target = exe_ctx.GetTarget() if exe_ctx.GetTarget().IsValid() else debugger.GetSelectedTarget()
    if not target.IsValid():
        raise NoTraceError("no target: load a trace with 'trace load BUNDLE'")
    process_trace = registry.for_target(target)
    if process_trace is None:
        index = debugger.GetIndexOfTarget(target)
        why = registry.why_dropped(target) or "load one with 'trace load BUNDLE'"
        raise NoTraceError(f"target #{index} has no trace: {why}")
    return target, process_trace


def chosen_tids(process_trace, target, tids):
    """``tids`` checked against the trace, or the selected thread's tid when none were given."""
    if tids:
        for tid in tids:
            process_trace.thread(tid)  # raises for a tid the trace lacks
        return list(dict.fromkeys(tids))
    thread = target.GetProcess().GetSelectedThread()
    return [thread.GetThreadID()] if thread.IsValid() else process_trace.tids[:1]


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
        " PATH. Pressing Enter after a dump continues where it stopped (--continue). Numbers are decimal or hex"
        " (0x1f). Disassembly follows target.x86-disassembly-flavor (AT&T unless it is 'intel').",
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        flag = lambda short, long, text: parser.add_option(short, long, text, default=None)  # noqa: E731
        flag("i", "instructions", "Dump the last instructions of each thread.")
        flag("E", "only-events", "Dump only the trace's events, no instructions.")
        flag("C", "function-calls", "Dump the call tree of each thread.")
        self.add_number_option("c", "count", "How many items, events or calls to show (default 10).",
                               lldb.eArgTypeCount, default=10)  # fmt: skip
        self.add_number_option("o", "offset", "Skip this many items, events or calls first (default 0).",
                               lldb.eArgTypeOffset, default=0)  # fmt: skip
        self.add_number_option("I", "id", "Start at this item index (then --offset counts from there).",
                               lldb.eArgTypeIndex)  # fmt: skip
        flag("f", "forwards", "Oldest first, counting --offset from the beginning.")
        flag("a", "all", "Show every item, event or call (instead of --count).")
        flag("T", "time", "Show timestamps (wall-clock ns with tscPerfZeroConversion, else the TSC).")
        flag("r", "raw", "Addresses only: no symbols or disassembly.")
        flag("K", "kind", "Show each instruction's control-flow kind (call, return, jump, far call...).")
        flag("e", "events", "Show the trace's events between the items.")
        flag("l", "flat", "With --function-calls: one call per line, no hierarchy.")
        flag("N", "newest-first", "With --function-calls: newest call first (children above their callers).")
        parser.add_option(
            "m",
            "module",
            "With --function-calls: only calls of functions in modules matching this glob (the file name: 'libc.so*').",
            default=None,
            value_type=lldb.eArgTypeShlibName,
        )
        parser.add_option(
            "n",
            "function",
            "With --function-calls: only calls of functions whose name (or whose PLT"
            " stub's) matches this glob ('str*').",
            default=None,
            value_type=lldb.eArgTypeFunctionName,
        )
        flag("j", "json", "Print JSON instead of text.")
        flag("v", "verbose", "Session info: also print the bundle file.")
        flag("k", "continue", "Continue where the previous dump of the thread stopped (what Enter does).")
        parser.add_option("F", "file", "Write the dump to this file.", default=None, value_type=lldb.eArgTypeFilename)
        self.add_tid_option("A thread to dump (repeat for several; default: the selected thread).")
        self.continuations = {}  # (target key, tid, mode, forwards) -> where the next dump starts

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
        was_set = parser.was_set
        mode = dump_options.dump_mode(was_set)
        dump_options.check_options(was_set, mode)
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = chosen_tids(process_trace, target, self.tids)
        if mode == dump_options.INFO:
            info = session_info(process_trace, target, tids, verbose=was_set("verbose"))
            _emit(result, json.dumps(info, indent=2) if was_set("json") else format_info(info), parser)
            return
        dump = {dump_options.INSTRUCTIONS: _instructions, dump_options.EVENTS: _events}.get(mode, _function_calls)
        symbolizer = Symbolizer(target, process_trace.memory, disassembly_flavor(debugger))
        chunks = [dump(self, parser, process_trace, target, tid, symbolizer) for tid in tids]
        as_json = json.dumps(chunks[0] if len(chunks) == 1 else chunks, indent=1) if was_set("json") else None
        text = as_json or "\n".join(chunks)
        _emit(result, text, parser)


def _has_short(command, letters):
    return any(word.startswith("-") and not word.startswith("--") and set(word[1:]) & set(letters)
               for word in command.split())  # fmt: skip


def _emit(result, text, parser):
    path = parser.file if parser.was_set("file") else None
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


def _count(parser):
    return None if parser.was_set("all") else parser.count


def _offset(parser):
    return parser.offset


def _header(process_trace, tid):
    return f"pid: '{process_trace.pid}', tid: '{tid}'"


def _continuation_key(target, tid, mode, forwards):
    return (target.GetProcess().GetUniqueID(), tid, mode, forwards)


def _view(parser):
    was_set = parser.was_set
    return dump_instructions.InstructionView(
        _count(parser), _offset(parser), was_set("forwards"), was_set("time"), was_set("raw"), was_set("events")
    )  # fmt: skip


def _checked_id(parser, decoded, tid):
    """--id, or None; an index past the thread's last item is an error (not an empty dump)."""
    if not parser.was_set("id") or decoded is None:
        return None
    if parser.id >= decoded.item_count:
        raise LldbTraceError(
            f"--id {parser.id} is past the end of thread {tid}'s trace: its items are 0 to {decoded.item_count - 1}"
        )
    return parser.id


def _continued(command, parser, key):
    """``(True, where)`` when --continue follows an earlier dump (``where`` None: it reached the end)."""
    if parser.was_set("continue") and key in command.continuations:
        return True, command.continuations[key]
    return False, None


def _instructions(command, parser, process_trace, target, tid, symbolizer):
    decoded = process_trace.decoded(tid)
    view = _view(parser)
    key = _continuation_key(target, tid, "instructions", view.forwards)
    continued, start = _continued(command, parser, key)
    item_id = _checked_id(parser, decoded, tid)
    if not continued and item_id is not None:
        start = item_id + view.offset if view.forwards else item_id - view.offset
    items = _paged(command, decoded, key, continued and start is None, lambda: dump_instructions.window(
        decoded, process_trace.expander, view, start))  # fmt: skip
    conversion = process_trace.bundle.tsc_conversion
    kinds = ControlFlowKinds(process_trace.memory.read) if parser.was_set("kind") else None
    if parser.was_set("json"):
        return dump_instructions.json_items(items, view, symbolizer, conversion, kinds)
    lines = _heading(parser, process_trace, tid, decoded, items, "items")
    return "\n".join(lines + dump_instructions.text_lines(items, view, symbolizer, conversion, kinds))


def _events(command, parser, process_trace, target, tid, symbolizer):
    decoded = process_trace.decoded(tid)
    view = _view(parser)
    key = _continuation_key(target, tid, "events", view.forwards)
    continued, start = _continued(command, parser, key)
    item_id = _checked_id(parser, decoded, tid)
    events = _paged(command, decoded, key, continued and start is None, lambda: dump_instructions.event_window(
        decoded, view, item_id, start))  # fmt: skip
    conversion = process_trace.bundle.tsc_conversion
    if parser.was_set("json"):
        return dump_instructions.json_events(events, view, decoded, conversion)
    lines = _heading(parser, process_trace, tid, decoded, events, "events")
    return "\n".join(lines + dump_instructions.event_lines(events, view, decoded, conversion))


def _function_calls(command, parser, process_trace, target, tid, symbolizer):
    decoded = process_trace.decoded(tid)
    was_set = parser.was_set
    view = dump_calls.CallView(
        _count(parser), _offset(parser), was_set("forwards"), was_set("newest-first"), was_set("flat"),
        parser.module if was_set("module") else None, parser.function if was_set("function") else None,
    )  # fmt: skip
    key = _continuation_key(target, tid, "calls", view.forwards)
    continued, start = _continued(command, parser, key)
    item_id = _checked_id(parser, decoded, tid)
    listed = dump_calls.listed_calls(process_trace.call_forest(tid), view, symbolizer) if decoded else ()
    if not continued and item_id is not None:
        at = dump_calls.anchor(listed, item_id)
        start = at + view.offset if view.forwards else at - view.offset
    calls = _paged(command, decoded, key, continued and start is None, lambda: dump_calls.call_window(
        listed, view, start))  # fmt: skip
    conversion = process_trace.bundle.tsc_conversion
    if was_set("json"):
        return dump_calls.json_calls(decoded, calls, view, symbolizer, conversion)
    lines = _heading(parser, process_trace, tid, decoded, calls, "calls")
    return "\n".join(lines + dump_calls.text_lines(decoded, calls, view, symbolizer, conversion))


def _paged(command, decoded, key, ended, window):
    """The entries ``window()`` picks, remembering where Enter continues; none once a continuation ran out."""
    entries, next_start = ([], None) if decoded is None or ended else window()
    command.continuations[key] = next_start
    return entries


def _heading(parser, process_trace, tid, decoded, entries, what):
    lines = [_header(process_trace, tid)]
    if decoded is None:
        lines.append("  (no trace for this thread)")
    elif not entries:
        lines.append(f"  (no more {what})" if parser.was_set("continue") else f"  (no {what})")
    return lines
