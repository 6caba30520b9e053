"""``pt dump`` (and ``trace dump``): what a loaded trace holds, per the RFC's session info."""

import json

import lldb

from ..errors import LldbTraceError
from ..target import registry
from . import dump_calls, dump_instructions
from .base import TidOptionCommand
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
        raise NoTraceError(f"target #{index} has no trace: load one with 'trace load BUNDLE'")
    return target, process_trace


def chosen_tids(process_trace, target, tids):
    """``tids`` checked against the trace, or the selected thread's tid when none were given."""
    if tids:
        for tid in tids:
            process_trace.thread(tid)  # raises for a tid the trace lacks
        return list(dict.fromkeys(tids))
    thread = target.GetProcess().GetSelectedThread()
    return [thread.GetThreadID()] if thread.IsValid() else process_trace.tids[:1]


class DumpCommand(TidOptionCommand):
    name = "dump"
    short_help = "Show the loaded trace: session info, the last instructions, or the call tree."
    long_help = (
        "Without --instructions or --function-calls: the trace technology and CPU, every module\n"
        "(original path, file read, load address, size, uuid) and the threads given with -t (default:\n"
        "the selected thread): their trace file and size and, once decoded, the instruction, error and\n"
        "event counts, decode time and memory used (--verbose adds the bundle file).\n"
        "\n"
        "--instructions: the last COUNT items (-c, default 10) starting OFFSET items back from the end\n"
        "(-o), newest first: '[index] 0xADDRESS : disassembly', a 'module`function' line when the\n"
        "function changes, '; at file:line' when the source line changes, and gaps as\n"
        "\"[index] error CODE. 'text'\". --forwards starts OFFSET items after the beginning, oldest\n"
        "first; --all shows every item; --time adds each item's timestamp; --raw prints addresses only;\n"
        "--events shows events (enable/disable, overflow, ...) between the items.\n"
        "\n"
        "--function-calls: the call tree, newest call first: '[first index]', indentation by depth,\n"
        "'module`function' and the address of the call's first instruction; --flat drops the\n"
        "hierarchy. A gap starts a new tree; a call entered before the trace began is marked\n"
        "'(untraced start)'. With timestamps, each call's inclusive and exclusive time.\n"
        "\n"
        "--json prints JSON instead of text and --file PATH writes to PATH. Pressing Enter after a\n"
        "dump continues where it stopped. Disassembly follows target.x86-disassembly-flavor (AT&T\n"
        "unless it is 'intel')."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        flag = lambda short, long, text: parser.add_option(short, long, text, default=None)  # noqa: E731
        flag("i", "instructions", "Dump the last instructions of each thread.")
        flag("C", "function-calls", "Dump the call tree of each thread.")
        parser.add_option("c", "count", "How many items (or calls) to show (default 10).", default=10,
                          value_type=lldb.eArgTypeCount)  # fmt: skip
        parser.add_option("o", "offset", "Start this many items (or calls) from the end (default 0).", default=0,
                          value_type=lldb.eArgTypeOffset)  # fmt: skip
        parser.add_option("I", "id", "Start at this item index instead of --offset.", default=-1,
                          value_type=lldb.eArgTypeIndex)  # fmt: skip
        flag("f", "forwards", "Oldest first, counting --offset from the beginning.")
        flag("a", "all", "Show every item (or call).")
        flag("T", "time", "Show timestamps (wall-clock ns with tscPerfZeroConversion, else TSC).")
        flag("r", "raw", "Addresses only: no symbols or disassembly.")
        flag("e", "events", "Show trace events between the items.")
        flag("l", "flat", "With --function-calls: one call per line, no hierarchy.")
        flag("j", "json", "Print JSON instead of text.")
        flag("v", "verbose", "Session info: also print the bundle file.")
        flag("k", "continue", "Continue where the previous dump of the thread stopped (what Enter does).")
        parser.add_option("F", "file", "Write the dump to this file.", default=None, value_type=lldb.eArgTypeFilename)
        self.add_tid_option("A thread to dump (repeat for several).")
        self.continuations = {}  # (target key, tid, mode, forwards) -> where the next dump starts

    def get_repeat_command(self, command):
        """Enter after a dump continues it: the same command plus --continue (LLDB passes "dump ...")."""
        command = command if command.startswith("pt ") else f"pt {command}"
        if " --instructions" in command or " --function-calls" in command or _has_short(command, "iC"):
            return command if " --continue" in command else command + " --continue"
        return None

    def run(self, debugger, args, exe_ctx, result):
        if args:
            result.SetError(f"unexpected argument '{args[0]}': give threads with -t TID")
            return
        parser = self.get_parser()
        was_set = parser.was_set
        if was_set("instructions") and was_set("function-calls"):
            raise LldbTraceError("choose one of --instructions and --function-calls")
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = chosen_tids(process_trace, target, self.tids)
        if not (was_set("instructions") or was_set("function-calls")):
            info = session_info(process_trace, target, tids, verbose=was_set("verbose"))
            _emit(result, json.dumps(info, indent=2) if was_set("json") else format_info(info), parser)
            return
        dump = _instructions if was_set("instructions") else _function_calls
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
    if parser.was_set("all"):
        return None
    count = int(parser.count)
    if count < 0:
        raise LldbTraceError(f"--count must be 0 or more, not {count}")
    return count


def _offset(parser):
    offset = int(parser.offset)
    if offset < 0:
        raise LldbTraceError(f"--offset must be 0 or more, not {offset}")
    return offset


def _header(process_trace, tid):
    return f"pid: '{process_trace.pid}', tid: '{tid}'"


def _continuation_key(target, tid, mode, forwards):
    return (target.GetProcess().GetUniqueID(), tid, mode, forwards)


def _instructions(command, parser, process_trace, target, tid, symbolizer):
    decoded = process_trace.decoded(tid)
    view = dump_instructions.InstructionView(
        _count(parser), _offset(parser), parser.was_set("forwards"), parser.was_set("time"), parser.was_set("raw"),
        parser.was_set("events"),
    )  # fmt: skip
    key = _continuation_key(target, tid, "instructions", view.forwards)
    start = command.continuations.get(key, -1) if parser.was_set("continue") else None
    if start is None and parser.was_set("id"):
        start = int(parser.id)
    items = _page(command, parser, decoded, key, start, lambda: dump_instructions.window(
        decoded, process_trace.expander, view, start))  # fmt: skip
    conversion = process_trace.bundle.tsc_conversion
    if parser.was_set("json"):
        return dump_instructions.json_items(items, view, symbolizer, conversion)
    lines = _heading(parser, process_trace, tid, decoded, items, "items")
    return "\n".join(lines + dump_instructions.text_lines(items, view, symbolizer, conversion))


def _function_calls(command, parser, process_trace, target, tid, symbolizer):
    decoded = process_trace.decoded(tid)
    key = _continuation_key(target, tid, "calls", False)
    start = command.continuations.get(key, -1) if parser.was_set("continue") else None
    calls = _page(command, parser, decoded, key, start, lambda: dump_calls.call_window(
        process_trace.call_forest(tid), _count(parser), _offset(parser), start))  # fmt: skip
    conversion = process_trace.bundle.tsc_conversion
    if parser.was_set("json"):
        return dump_calls.json_calls(decoded, calls, symbolizer, conversion)
    lines = _heading(parser, process_trace, tid, decoded, calls, "calls")
    return "\n".join(lines + dump_calls.text_lines(decoded, calls, parser.was_set("flat"), symbolizer, conversion))


def _page(command, parser, decoded, key, start, window):
    """The entries ``window()`` picks, remembering where Enter continues; none once a continuation ran out."""
    if decoded is None or (start is None and parser.was_set("continue")):
        entries, next_start = [], None
    else:
        entries, next_start = window()
    command.continuations[key] = next_start
    return entries


def _heading(parser, process_trace, tid, decoded, entries, what):
    lines = [_header(process_trace, tid)]
    if decoded is None:
        lines.append("  (no trace for this thread)")
    elif not entries:
        lines.append(f"  (no more {what})" if parser.was_set("continue") else f"  (no {what})")
    return lines


def session_info(process_trace, target, tids, verbose):
    """Everything ``pt dump`` shows, as plain data (the --json form)."""
    bundle = process_trace.bundle
    cpu = bundle.cpu
    info = {
        "technology": "intel-pt",
        "bundle": str(bundle.path),
        "format": bundle.format,
        "cpu": {"vendor": cpu.vendor, "family": cpu.family, "model": cpu.model, "stepping": cpu.stepping},
        "process": {"pid": process_trace.pid, "triple": process_trace.process.triple},
        "modules": [
            {
                "systemPath": module.system_path,
                "file": str(module.path),
                "loadAddress": f"0x{module.load_address:x}",
                "size": module.size,
                "uuid": module.build_id or module.uuid,
            }
            for module in process_trace.process.modules
        ],
        "threads": [_thread_info(process_trace, target, tid) for tid in tids],
    }
    if verbose:
        info["bundleText"] = bundle.text
    return info


def _thread_info(process_trace, target, tid):
    thread = process_trace.thread(tid)
    lldb_thread = target.GetProcess().GetThreadByID(tid)
    info = {
        "tid": tid,
        "index": lldb_thread.GetIndexID() if lldb_thread.IsValid() else None,
        "traceFile": str(thread.trace) if thread.trace else None,
        "traceSize": thread.trace_size,
    }
    per_cpu = process_trace.per_cpu_source(tid)
    if per_cpu is not None:
        info["perCpu"] = per_cpu
    backend = getattr(process_trace, "backend", None)
    if backend is not None:
        live_bytes = process_trace.trace_bytes(tid)
        info["live"] = {"backend": backend.name, "bytes": len(live_bytes or b"")}
    decoded = process_trace.decoded_if_done(tid)
    if decoded is not None:
        info["decoded"] = {
            "instructions": decoded.instruction_count,
            "errors": decoded.error_count,
            "events": decoded.event_count,
            "decodeSeconds": round(decoded.decode_seconds, 6),
            "memoryBytes": decoded.memory_bytes,
        }
        forest = process_trace.forest_if_built(tid)
        if forest is not None:
            info["decoded"]["functionCalls"] = len(forest)
    return info


def format_info(info):
    """The text form of :func:`session_info`."""
    cpu = info["cpu"]
    cpu_text = f"family {cpu['family']} model {cpu['model']} stepping {cpu['stepping']}"
    lines = [
        f"Trace technology: {info['technology']}",
        f"CPU: {'Intel ' + cpu_text if cpu['vendor'] == 'intel' else 'unknown (no errata applied)'}",
        f"Bundle: {info['bundle']} ({info['format']} format)",
        f"Process {info['process']['pid']} ({info['process']['triple']})",
        "  Modules:",
    ]
    for module in info["modules"]:
        lines.append(f"    {module['systemPath']}")
        if module["file"] != module["systemPath"]:
            lines.append(f"      file: {module['file']}")
        lines.append(f"      load address: {module['loadAddress']}, size: {module['size']} bytes")
        lines.append(f"      uuid: {module['uuid'] or '(none)'}")
    lines.append("  Threads:")
    for thread in info["threads"]:
        index = f"thread #{thread['index']}: " if thread["index"] is not None else ""
        lines.append(f"    {index}tid = {thread['tid']}")
        per_cpu = thread.get("perCpu")
        if per_cpu is not None:
            cpus = ", ".join(map(str, per_cpu["cpus"])) or "none"
            lines.append(
                f"      per-cpu trace: {per_cpu['bytes']} bytes in {per_cpu['pieces']} pieces from cpus {cpus}"
                f" ({per_cpu['executions']} executions, {per_cpu['droppedBytes']} bytes undecodable)"
            )
        elif "live" in thread:
            lines.append(f"      live trace: {thread['live']['bytes']} bytes ({thread['live']['backend']})")
        elif thread["traceFile"] is None:
            lines.append("      no trace of its own")
            continue
        else:
            lines.append(f"      trace file: {thread['traceFile']} ({thread['traceSize']} bytes)")
        decoded = thread.get("decoded")
        if decoded is None:
            lines.append("      not decoded yet")
            continue
        calls = f", function calls: {decoded['functionCalls']}" if "functionCalls" in decoded else ""
        lines.append(
            f"      instructions: {decoded['instructions']}, errors: {decoded['errors']}, events: {decoded['events']}"
            + calls
        )
        per_instruction = decoded["memoryBytes"] / max(decoded["instructions"], 1)
        lines.append(
            f"      decoded in {decoded['decodeSeconds'] * 1000:.1f} ms, "
            f"{decoded['memoryBytes']} bytes ({per_instruction:.2f} bytes per instruction)"
        )
    if "bundleText" in info:
        lines += ["Bundle file:", info["bundleText"].rstrip()]
    return "\n".join(lines)
