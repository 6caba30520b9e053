"""``pt dump`` (and ``trace dump``): what a loaded trace holds, per the RFC's session info."""

import json

import lldb

from ..errors import LldbTraceError
from ..target import registry
from .base import TraceCommand


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


class DumpCommand(TraceCommand):
    name = "dump"
    short_help = "Show the loaded trace: CPU, modules, and per thread its trace file and decoding statistics."
    long_help = (
        "Describes the trace of the selected target: the trace technology and CPU, every module\n"
        "(original path, file read, load address, size, uuid) and the threads given with -t (default:\n"
        "the selected thread): their trace file and size and, once decoded, the instruction, error and\n"
        "event counts, decode time and memory used. --verbose adds the bundle file itself; --json\n"
        "prints the same as one JSON object."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        parser.add_option("v", "verbose", "Also print the bundle file.", default=None)
        parser.add_option("j", "json", "Print one JSON object instead of text.", default=None)
        parser.add_option(
            "t", "tid", "A thread to describe (repeat for several).", default=None, value_type=lldb.eArgTypeThreadID
        )
        self.tids = []

    def option_parsing_started(self):
        super().option_parsing_started()
        self.tids = []

    def set_option_value(self, exe_ctx, opt_name, opt_value):
        if opt_name != "tid":
            return super().set_option_value(exe_ctx, opt_name, opt_value)
        try:
            self.tids.append(int(opt_value, 0))
        except ValueError:
            return False
        return True

    def run(self, debugger, args, exe_ctx, result):
        if args:
            result.SetError(f"unexpected argument '{args[0]}': give threads with -t TID")
            return
        target, process_trace = selected_trace(debugger, exe_ctx)
        tids = chosen_tids(process_trace, target, self.tids)
        info = session_info(process_trace, target, tids, verbose=self.get_parser().was_set("verbose"))
        if self.get_parser().was_set("json"):
            result.AppendMessage(json.dumps(info, indent=2))
        else:
            result.AppendMessage(format_info(info))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


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
    decoded = process_trace.decoded_if_done(tid)
    if decoded is not None:
        info["decoded"] = {
            "instructions": decoded.instruction_count,
            "errors": len(decoded.gaps),
            "events": len(decoded.events),
            "decodeSeconds": round(decoded.decode_seconds, 6),
            "memoryBytes": decoded.memory_bytes,
        }
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
        if thread["traceFile"] is None:
            lines.append("      no trace of its own")
            continue
        lines.append(f"      trace file: {thread['traceFile']} ({thread['traceSize']} bytes)")
        decoded = thread.get("decoded")
        if decoded is None:
            lines.append("      not decoded yet")
            continue
        lines.append(
            f"      instructions: {decoded['instructions']}, errors: {decoded['errors']}, events: {decoded['events']}"
        )
        per_instruction = decoded["memoryBytes"] / max(decoded["instructions"], 1)
        lines.append(
            f"      decoded in {decoded['decodeSeconds'] * 1000:.1f} ms, "
            f"{decoded['memoryBytes']} bytes ({per_instruction:.2f} bytes per instruction)"
        )
    if "bundleText" in info:
        lines += ["Bundle file:", info["bundleText"].rstrip()]
    return "\n".join(lines)
