"""The session info view (``pt dump`` and ``lldb-trace dump`` without a mode, ``pt load -v``).

What a traced process holds: the CPU, the processes it created that ran
untraced, every module, and per thread its trace, the signal that stopped it
or its exit, a truncation, and the decode's counts.  Built as plain data
first (the ``--json`` form, written by ``json.dumps``), then written as text
by :func:`info_text`, so both forms say the same things.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..bundle.stops import stop_json
from ..decode.compiled_loop import unavailable_reason
from ..decode.truncation import find_file_cut
from ..history import describe_position
from ..values import ENGINE

if TYPE_CHECKING:
    from ..bundle.model import Bundle
    from ..decode.decoded_thread import DecodedThread
    from ..process_trace import ProcessTrace
    from ..traced_thread import TracedThread


def session_info(
    process_trace: ProcessTrace,
    threads: Sequence[TracedThread],
    verbose: bool,
    thread_index: Callable[[int], int | None] = lambda tid: None,
    position: Callable[[int], int | None] = lambda tid: None,
) -> dict:
    """Everything the session info shows of ``process_trace`` and its ``threads``, as plain data;
    ``thread_index(tid)``: the debugger's thread number; ``position(tid)``: the thread's history
    position (an index) where a debugger moved it (None: the end)."""
    bundle = process_trace.bundle
    cpu = bundle.cpu
    info: dict = {
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
        "threads": [_thread_info(thread, thread_index(thread.tid), position(thread.tid)) for thread in threads],
    }
    process = process_trace.process
    if process.core_file is not None or process.start_core_file is not None:  # values in the past (docs/values.md)
        info["process"]["knownStates"] = {
            "core": None if process.core_file is None else str(process.core_file),
            "startCore": None if process.start_core_file is None else str(process.start_core_file),
            "valueEngine": ENGINE,
        }
    children = process_trace.process.untraced_children
    if children:  # processes it created that ran without tracing
        info["process"]["untracedChildren"] = list(children)
    missing = process_trace.process.missing_modules
    if missing:  # a perf.data's mappings whose binary was not found: their code is a gap
        info["missingModules"] = [
            {"systemPath": m.system_path, "uuid": m.build_id, "start": f"0x{m.start:x}", "end": f"0x{m.end:x}"}
            for m in missing
        ]
    if verbose:
        info["bundleText"] = bundle.text
    return info


def _thread_info(thread: TracedThread, index: int | None, position: int | None) -> dict:
    trace_file = thread.bundle_thread.trace
    info = {
        "tid": thread.tid,
        "index": index,
        "traceFile": None,
        "traceSize": 0,
        **thread.describe_source(),  # where the bytes come from: a file, per-cpu pieces, a live backend
    }
    stop = thread.stop
    if stop is not None:  # the signal that stopped the thread (a crash), or its exit
        info["stopReason"] = {**stop_json(stop), "description": stop.text}
    decoded = thread.decoded_if_done()
    cut = decoded.truncation if decoded is not None else trace_file and find_file_cut(trace_file)
    if cut:  # the trace ends inside a packet: the file was cut short
        info["truncated"] = {**cut.to_json(), "text": cut.describe()}
    if decoded is not None:
        info["decoded"] = {
            "instructions": decoded.instruction_count,
            "errors": decoded.error_count,
            "events": decoded.event_count,
            "decodeSeconds": round(decoded.decode_seconds, 6),
            "memoryBytes": decoded.storage_bytes,
            "decodeLoop": decoded.decode_loop,  # "compiled" (block_loop.c) or "python"
        }
        if decoded.decode_loop == "python":
            info["decoded"]["decodeLoopReason"] = unavailable_reason()
        info["decoded"]["functionCalls"] = len(thread.call_forest())
        info["timing"] = _timing_info(thread.bundle, decoded)
        end = decoded.item_count
        position = end if position is None else position
        info["position"] = {"index": position, "end": end, "text": describe_position(position, end)}
    elif (tail := thread.tail_if_done()) is not None:  # a large trace, decoded only at its end so far
        info["decodedEnd"] = {"instructions": tail.decoded.instruction_count, "fromOffset": tail.start_offset}
    return info


def _timing_info(bundle: Bundle, decoded: DecodedThread) -> dict:
    """How finely the thread's items are placed in time: which packets, how many time updates, in what unit."""
    updates = sum(len(part.tsc_values) for part in decoded.parts)
    if not updates:
        return {"packets": None, "updates": 0}
    clock = bundle.cpu.clock
    finer = clock.describe() if clock is not None else ""
    return {
        "packets": "TSC" + (f", {finer}" if finer else ""),
        "updates": updates,
        "instructionsPerUpdate": round(decoded.instruction_count / updates, 1),
        "unit": "ns" if bundle.tsc_conversion is not None else "TSC ticks",
    }


def _timing_text(timing: dict) -> str:
    if not timing["packets"]:
        return "      timing: none (no timing packets; record with --tsc, --mtc or --cyc for times)"
    return (
        f"      timing: {timing['packets']}; {timing['updates']} time updates, one per"
        f" {timing['instructionsPerUpdate']} instructions on average; times in {timing['unit']}"
    )


def _decode_loop_text(decoded: dict) -> str:
    loop = decoded.get("decodeLoop")
    if loop == "compiled":
        return "      decode loop: compiled (C)"
    if loop == "python":
        return f"      decode loop: Python (no compiled loop: {decoded.get('decodeLoopReason')})"
    return "      decode loop: none (no blocks to decode)"


def info_text(info: dict) -> str:
    """The text form of :func:`session_info`."""
    cpu = info["cpu"]
    cpu_text = f"family {cpu['family']} model {cpu['model']} stepping {cpu['stepping']}"
    lines = [
        f"Trace technology: {info['technology']}",
        f"CPU: {'Intel ' + cpu_text if cpu['vendor'] == 'intel' else 'unknown (no errata applied)'}",
        f"Bundle: {info['bundle']} ({info['format']} format)",
        f"Process {info['process']['pid']} ({info['process']['triple']})",
    ]
    states = info["process"].get("knownStates")
    if states is not None:
        named = (("core", "end core"), ("startCore", "start core"))
        cores = [f"{name} {states[key]}" for key, name in named if states[key]]
        lines.append(f"  Known states: {', '.join(cores)} (value engine: {states['valueEngine']})")
    children = info["process"].get("untracedChildren")
    if children:
        lines.append(
            f"  Untraced children: {', '.join(map(str, children))} (processes it created, by fork, vfork or clone;"
            " they ran without tracing)"
        )
    lines.append("  Modules:")
    for module in info["modules"]:
        lines.append(f"    {module['systemPath']}")
        if module["file"] != module["systemPath"]:
            lines.append(f"      file: {module['file']}")
        lines.append(f"      load address: {module['loadAddress']}, size: {module['size']} bytes")
        lines.append(f"      uuid: {module['uuid'] or '(none)'}")
    for module in info.get("missingModules", ()):
        uuid = f" (build-id {module['uuid']})" if module["uuid"] else ""
        lines.append(f"    {module['systemPath']}{uuid}: binary not found, its code is a gap in the trace")
        lines.append(f"      mapped at {module['start']}-{module['end']}; give its folder with --search-path DIR")
    lines.append("  Threads:")
    for thread in info["threads"]:
        index = f"thread #{thread['index']}: " if thread["index"] is not None else ""
        lines.append(f"    {index}tid = {thread['tid']}")
        stop = thread.get("stopReason")
        if stop is not None:
            lines.append(f"      stop reason: {stop['description']}" + (f" at {stop['pc']}" if "pc" in stop else ""))
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
            buffers = f" in {thread['auxBuffers']} AUX buffers" if thread.get("auxBuffers", 1) > 1 else ""
            lines.append(f"      trace file: {thread['traceFile']} ({thread['traceSize']} bytes{buffers})")
        for lost in thread.get("dataLost", ()):
            lines.append(f"      data lost at trace byte {lost['offset']}: {lost['reason']}")
        if "position" in thread:
            lines.append(f"      position: {thread['position']['text']}")
        if "truncated" in thread:
            lines.append(
                f"      warning: the trace is truncated: it ends inside {thread['truncated']['text']}; "
                "what the thread ran after its last complete packet is unknown"
            )
        decoded = thread.get("decoded")
        if decoded is None and "decodedEnd" in thread:
            end = thread["decodedEnd"]
            lines.append(
                f"      decoded at its end only: its last {end['instructions']} instructions, from trace byte"
                f" {end['fromOffset']} on ('bt' or a history command decodes the rest)"
            )
            continue
        if decoded is None:
            lines.append("      not decoded yet")
            continue
        lines.append(
            f"      instructions: {decoded['instructions']}, errors: {decoded['errors']}, events: {decoded['events']},"
            f" function calls: {decoded['functionCalls']}"
        )
        per_instruction = decoded["memoryBytes"] / max(decoded["instructions"], 1)
        lines.append(
            f"      decoded in {decoded['decodeSeconds'] * 1000:.1f} ms, "
            f"{decoded['memoryBytes']} bytes ({per_instruction:.2f} bytes per instruction)"
        )
        lines.append(_decode_loop_text(decoded))
        lines.append(_timing_text(thread["timing"]))
    if "bundleText" in info:
        lines += ["Bundle file:", info["bundleText"].rstrip()]
    return "\n".join(lines)
