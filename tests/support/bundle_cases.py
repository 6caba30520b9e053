"""Bundles for the loader tests: a good one to start from, and a table of broken variants.

The good bundle is the committed ``static`` scenario (one statically linked
module, so it loads on any machine) copied into a scratch folder.  Each case
breaks it in one way and names a fragment the one-line error must contain.
"""

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .paths import TRACES

STATIC = TRACES / "static"
TID = 5668
EM_AARCH64 = 183


def make_good_bundle(folder, rfc=False):
    """A copy of the static scenario in ``folder``; returns the bundle path."""
    folder = Path(folder)
    shutil.copytree(STATIC / "traces", folder / "traces")
    shutil.copytree(STATIC / "modules", folder / "modules")
    document = json.loads((STATIC / "trace.json").read_text())
    if rfc:
        document = to_rfc(document)
    path = folder / "trace.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def to_rfc(native):
    """The same bundle in the processor-trace RFC's format."""
    cpu = native["cpuInfo"]
    processes = []
    for process in native["processes"]:
        threads = [{"tid": t["tid"], "traceFile": t["iptTrace"]} for t in process["threads"]]
        processes.append({**process, "threads": threads})
    vendor = "intel" if cpu["vendor"] == "GenuineIntel" else "unknown"
    return {"trace": {"type": "intel-pt", "pt_cpu": {**cpu, "vendor": vendor}}, "processes": processes}


@dataclass
class Case:
    name: str
    breaks: Callable  # (bundle path, document) -> document to write, or None when written already
    message: str  # a fragment of the expected error (may use {folder})


def _edit(change):
    def breaks(path, document):
        change(document)
        return document

    return breaks


def _write_text(text):
    def breaks(path, document):
        path.write_text(text)

    return breaks


def _write_bytes(data):
    def breaks(path, document):
        path.write_bytes(data)

    return breaks


def _thread(document):
    return document["processes"][0]["threads"][0]


def _module(document):
    return document["processes"][0]["modules"][0]


def _file_replaced(relative, content=None, directory=False):
    def breaks(path, document):
        target = path.parent / relative
        target.unlink()
        if directory:
            target.mkdir()
        elif content is not None:
            target.write_bytes(content)
        return document

    return breaks


def _aarch64_module(path, document):
    module = path.parent / "modules" / "static"
    data = bytearray(module.read_bytes())
    data[18:20] = EM_AARCH64.to_bytes(2, "little")
    module.write_bytes(bytes(data))
    return document


def _bundle_is_a_bare_directory(path, document):
    path.unlink()


def _fifo(relative):
    """``relative`` (the bundle itself, a trace, a module) replaced by a named pipe: opening it would block."""

    def breaks(path, document):
        target = path.parent / relative
        target.unlink()
        os.mkfifo(target)
        return None if target == path else document

    return breaks


def _module_copy_at(address):
    """A second module, a copy of the first under another name, loaded at ``address``."""

    def breaks(path, document):
        shutil.copy(path.parent / "modules" / "static", path.parent / "modules" / "copy")
        copy = {**_module(document), "file": "modules/copy", "loadAddress": address}
        document["processes"][0]["modules"].append(copy)
        return document

    return breaks


def _module_bytes(change):
    def breaks(path, document):
        module = path.parent / "modules" / "static"
        module.write_bytes(change(bytearray(module.read_bytes())))
        return document

    return breaks


def _no_program_headers(data):
    data[56:58] = (0).to_bytes(2, "little")  # e_phnum: no segments, as in an object or debug-info file
    return bytes(data)


def _second_process(document):
    document["processes"].append({**document["processes"][0], "pid": 1, "threads": [{"tid": TID}]})


def _per_cpu(document):
    document["cpus"] = [{"id": 0, "iptTrace": f"traces/{TID}.ipt", "contextSwitchTrace": f"traces/{TID}.ipt"}]
    document["tscPerfZeroConversion"] = {"timeMult": 1, "timeShift": 0, "timeZero": 0}


def _two_cpus_with_one_id(document):
    _per_cpu(document)
    _thread(document).pop("iptTrace")
    document["cpus"].append(dict(document["cpus"][0]))


def _per_cpu_missing_switches(document):
    _per_cpu(document)
    _thread(document).pop("iptTrace")
    document["cpus"][0]["contextSwitchTrace"] = "traces/switches.bin"


CASES = [
    Case("trailing comma", _write_text('{\n  "type": "intel-pt",\n}\n'), "trace.json:3:1: invalid JSON"),
    Case("empty bundle file", _write_text(""), "trace.json is empty: give a bundle's JSON file or a perf.data"),
    Case("binary bundle file", _write_bytes(b"\x02\x82\xff\xfe"), "not a JSON text file"),
    Case("top level array", _write_text("[1, 2]"), "not a trace bundle"),
    Case("no type and no trace", _write_text('{"processes": []}'), "not a trace bundle"),
    Case("wrong trace type", _edit(lambda d: d.update(type="perf")), 'type: expected "intel-pt", got "perf"'),
    Case("cpuInfo missing", _edit(lambda d: d.pop("cpuInfo")), "cpuInfo: required but missing"),
    Case("family as string", _edit(lambda d: d["cpuInfo"].update(family="6")), "cpuInfo.family: expected an integer"),
    Case(
        "AMD cpu",
        _edit(lambda d: d["cpuInfo"].update(vendor="AuthenticAMD")),
        'cpuInfo.vendor: expected one of "GenuineIntel", "unknown", got "AuthenticAMD"',
    ),
    Case(
        "tid as string", _edit(lambda d: _thread(d).update(tid="x")), "processes[0].threads[0].tid: expected an integer"
    ),
    Case(
        "tid missing",
        _edit(lambda d: d["processes"][0]["threads"].append({"iptTrace": "traces/5668.ipt"})),
        "processes[0].threads[1].tid: required but missing",
    ),
    Case(
        "bad hex address",
        _edit(lambda d: _module(d).update(loadAddress="0xZZ")),
        "processes[0].modules[0].loadAddress: expected an integer, a decimal string, or a hex string",
    ),
    Case(
        "negative address",
        _edit(lambda d: _module(d).update(loadAddress=-4096)),
        "processes[0].modules[0].loadAddress: expected a value >= 0",
    ),
    Case(
        "misspelt key",
        _edit(lambda d: _module(d).update(fil="x")),
        "processes[0].modules[0].fil: unknown property (expected one of: systemPath, file, loadAddress, uuid)",
    ),
    Case("empty path", _edit(lambda d: _thread(d).update(iptTrace="")), "threads[0].iptTrace: expected a non-empty"),
    Case(
        "duplicate tid",
        _edit(lambda d: d["processes"][0]["threads"].append(dict(_thread(d)))),
        f"processes[0].threads[1].tid: tid {TID} appears twice (also at processes[0].threads[0].tid)",
    ),
    Case("duplicate pid", _edit(lambda d: d["processes"].append(dict(d["processes"][0]))), "pid 5668 appears twice"),
    Case("tid in two processes", _edit(_second_process), f"processes[1].threads[0].tid: tid {TID} appears twice"),
    Case(
        "missing trace file",
        _edit(lambda d: _thread(d).update(iptTrace="traces/absent.ipt")),
        "processes[0].threads[0].iptTrace: trace file {folder}/traces/absent.ipt does not exist",
    ),
    Case("trace is a directory", _file_replaced(f"traces/{TID}.ipt", directory=True), "is a directory, not a file"),
    Case("empty trace file", _file_replaced(f"traces/{TID}.ipt", content=b""), f"traces/{TID}.ipt is empty"),
    Case(
        "missing module",
        _edit(lambda d: _module(d).update(file="modules/absent")),
        "processes[0].modules[0].file: module {folder}/modules/absent does not exist: copy the module there, "
        "or bundle it with 'trace save --copy-images'",
    ),
    Case(
        "systemPath missing, no file",
        _edit(lambda d: (_module(d).pop("file"), _module(d).update(systemPath="/nonexistent/static"))),
        "processes[0].modules[0].systemPath: module /nonexistent/static does not exist",
    ),
    Case(
        "module not ELF",
        _file_replaced("modules/static", content=b"#!/bin/sh\necho hi\n"),
        "modules[0].file: {folder}/modules/static is not an ELF file",
    ),
    Case("module for aarch64", _aarch64_module, "is an EM_AARCH64 ELF file, but the process is x86_64"),
    Case(
        "uuid mismatch",
        _edit(lambda d: _module(d).update(uuid="00" * 20)),
        "processes[0].modules[0].uuid: {folder}/modules/static has build-id",
    ),
    Case(
        "arm triple",
        _edit(lambda d: d["processes"][0].update(triple="aarch64-unknown-linux-gnu")),
        "processes[0].triple: 'aarch64-unknown-linux-gnu' is not an x86 triple",
    ),
    Case("bundle is a bare directory", _bundle_is_a_bare_directory, "is a directory without a trace.json"),
    Case(
        "cpus without time conversion",
        _edit(lambda d: d.update(cpus=[{"id": 0, "iptTrace": "a", "contextSwitchTrace": "b"}])),
        "cpus: needs tscPerfZeroConversion as well",
    ),
    Case("per-cpu and per-thread traces", _edit(_per_cpu), "a bundle with per-cpu traces ('cpus') has no thread"),
    Case(
        "per-cpu context switches missing",
        _edit(_per_cpu_missing_switches),
        "cpus[0].contextSwitchTrace: context switch trace {folder}/traces/switches.bin does not exist",
    ),
    Case(
        "RFC bundle with LLDB's vendor name",
        lambda p, d: to_rfc(d) | {"trace": {**to_rfc(d)["trace"], "pt_cpu": {**d["cpuInfo"]}}},
        'trace.pt_cpu.vendor: expected one of "intel", "unknown", got "GenuineIntel"',
    ),
    # Bundles that loaded (or hung, or crashed) before issue 14.
    Case(
        "the same module twice",
        _module_copy_at("0x400000"),
        "processes[0].modules[1].loadAddress: {folder}/modules/copy at 0x400000-0x4020b4 overlaps "
        "processes[0].modules[0], {folder}/modules/static at 0x400000-0x4020b4: each module needs addresses",
    ),
    Case(
        "modules overlapping by a page",
        _module_copy_at("0x402000"),
        "processes[0].modules[1].loadAddress: {folder}/modules/copy at 0x402000-0x4040b4 overlaps "
        "processes[0].modules[0], {folder}/modules/static at 0x400000-0x4020b4",
    ),
    Case(
        "neither processes nor kernel",
        _edit(lambda d: d.pop("processes")),
        'processes: required (with at least one process) when "kernel" is not provided',
    ),
    Case(
        "no process and no kernel",
        _edit(lambda d: d.update(processes=[])),
        'processes: required (with at least one process) when "kernel" is not provided',
    ),
    Case(
        "tid of 2**70",
        _edit(lambda d: _thread(d).update(tid=2**70)),
        "processes[0].threads[0].tid: expected a value <= 2147483647, got 1180591620717411303424 (a Linux pid or tid",
    ),
    Case("pid 0", _edit(lambda d: d["processes"][0].update(pid=0)), "processes[0].pid: expected a value >= 1, got 0"),
    Case("tid as a float", _edit(lambda d: _thread(d).update(tid=5668.0)), "tid: expected an integer, got 5668.0"),
    Case(
        "timeMult 0",
        _edit(lambda d: d.update(tscPerfZeroConversion={"timeMult": 0, "timeShift": 0, "timeZero": 0})),
        "tscPerfZeroConversion.timeMult: expected a value >= 1, got 0 (perf's time_mult",
    ),
    Case(
        "timeShift 64",
        _edit(lambda d: d.update(tscPerfZeroConversion={"timeMult": 1, "timeShift": 64, "timeZero": 0})),
        "tscPerfZeroConversion.timeShift: expected a value <= 63, got 64",
    ),
    Case(
        "timeZero past 64 bits",
        _edit(lambda d: d.update(tscPerfZeroConversion={"timeMult": 1, "timeShift": 0, "timeZero": str(2**64)})),
        'tscPerfZeroConversion.timeZero: "18446744073709551616" does not fit in 64 bits',
    ),
    Case(
        "loadAddress past 64 bits",
        _edit(lambda d: _module(d).update(loadAddress="0x10000000000000000")),
        'processes[0].modules[0].loadAddress: "0x10000000000000000" does not fit in 64 bits',
    ),
    Case(
        "module at the top of the address space",
        _edit(lambda d: _module(d).update(loadAddress="0xfffffffffffff000")),
        "processes[0].modules[0].loadAddress: {folder}/modules/static (8372 bytes) at 0xfffffffffffff000 would run "
        "past the end of the 64-bit address space",
    ),
    Case(
        "trace of 1 MB of zeros",
        _file_replaced(f"traces/{TID}.ipt", content=bytes(1 << 20)),
        f"processes[0].threads[0].iptTrace: {{folder}}/traces/{TID}.ipt holds zero bytes only (PAD packets) in its "
        "1048576 bytes: no instruction can be decoded from it",
    ),
    Case(
        "trace without a PSB",
        _file_replaced(f"traces/{TID}.ipt", content=bytes(range(1, 256)) * 16),
        f"{{folder}}/traces/{TID}.ipt holds no PSB packet, where decoding starts, in its 4080 bytes",
    ),
    Case("bundle is a named pipe", _fifo("trace.json"), "{folder}/trace.json is a named pipe (FIFO), not a bundle"),
    Case(
        "trace is a named pipe",
        _fifo(f"traces/{TID}.ipt"),
        f"processes[0].threads[0].iptTrace: trace file {{folder}}/traces/{TID}.ipt is a named pipe (FIFO), not a file",
    ),
    Case(
        "module is a named pipe",
        _fifo("modules/static"),
        "processes[0].modules[0].file: module {folder}/modules/static is a named pipe (FIFO), not a file",
    ),
    Case(
        "module is /dev/zero",
        _edit(lambda d: _module(d).update(file="/dev/zero")),
        "processes[0].modules[0].file: module /dev/zero is a character device, not a file",
    ),
    Case(
        "module that cannot be read",
        _edit(lambda d: _module(d).update(file="/proc/self/mem")),
        "processes[0].modules[0].file: cannot read /proc/self/mem: ",
    ),
    Case(
        "truncated module",
        _module_bytes(lambda data: bytes(data[:5000])),
        "processes[0].modules[0].file: {folder}/modules/static is a damaged (truncated?) ELF file",
    ),
    Case(
        "module without program headers",
        _module_bytes(_no_program_headers),
        "processes[0].modules[0].file: {folder}/modules/static has no loadable segments (PT_LOAD)",
    ),
    Case(
        "JSON nested too deeply", _write_text("[" * 100_000), "trace.json: JSON nested too deeply to be a trace bundle"
    ),
    Case(
        "process without threads",
        _edit(lambda d: d["processes"][0].update(threads=[])),
        "processes[0].threads: expected at least 1 item, got []",
    ),
    Case(
        "process without modules",
        _edit(lambda d: d["processes"][0].update(modules=[])),
        "processes[0].modules: expected at least 1 item, got [] (every module the threads ran code of",
    ),
    Case("two cpus with one id", _edit(_two_cpus_with_one_id), "cpus[1].id: cpu 0 appears twice (also at cpus[0].id)"),
    Case(
        "RFC bundle without processes",
        lambda p, d: to_rfc(d) | {"processes": []},
        "processes: expected at least 1 item, got []",
    ),
    Case(
        "RFC thread without traceFile",
        lambda p, d: to_rfc(d) | {"processes": [{**to_rfc(d)["processes"][0], "threads": [{"tid": 1}]}]},
        "processes[0].threads[0].traceFile: required but missing",
    ),
]


def break_bundle(folder, case):
    """Make the good bundle in ``folder``, break it as ``case`` says; returns (bundle path, expected message)."""
    path = make_good_bundle(folder)
    document = case.breaks(path, json.loads(path.read_text()))
    if document is not None:
        path.write_text(json.dumps(document, indent=2))
    target = path.parent if case.name == "bundle is a bare directory" else path
    return target, case.message.format(folder=path.parent)
