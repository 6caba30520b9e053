"""Writes a Recording as a trace bundle in LLDB's native intel-pt format.

Layout of OUTDIR: ``trace.json``, ``traces/<tid>.ipt`` (one raw stream per
thread), ``ground_truth/<tid>.txt``, ``recording.json`` (how it ended), and
with ``copy_program`` the executable under ``modules/`` so the bundle can move.
"""

import json
import os
import shutil

from ..elf_info import ElfInfo

# The CPU named in software-made bundles: decoders (native LLDB's too) refuse an unknown
# vendor, and the packet scheme is checked to decode exactly with this CPU's errata.
SOFTWARE_CPU = {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 4}


def _module_entry(path, load_address, outdir, copy):
    entry = {"systemPath": path, "loadAddress": hex(load_address)}
    if copy:
        copied = os.path.join("modules", os.path.basename(path))
        os.makedirs(os.path.join(outdir, "modules"), exist_ok=True)
        shutil.copy2(path, os.path.join(outdir, copied))
        entry["file"] = copied
    build_id = ElfInfo(path).build_id
    if build_id:
        entry["uuid"] = build_id
    return entry


def write_bundle(recording, outdir, copy_program=False):
    """Write the bundle (replacing an earlier one in ``outdir``); returns the path of trace.json."""
    for owned in ("traces", "ground_truth", "modules"):  # no stale threads from an earlier recording
        shutil.rmtree(os.path.join(outdir, owned), ignore_errors=True)
    os.makedirs(os.path.join(outdir, "traces"))
    os.makedirs(os.path.join(outdir, "ground_truth"))
    threads = []
    for tid, flow in recording.threads.items():
        trace = os.path.join("traces", f"{tid}.ipt")
        with open(os.path.join(outdir, trace), "wb") as out:
            out.write(recording.streams[tid])
        flow.truth.write(os.path.join(outdir, "ground_truth", f"{tid}.txt"))
        threads.append({"tid": tid, "iptTrace": trace})
    modules = [
        _module_entry(path, address, outdir, copy_program and path == recording.program)
        for path, address in sorted(recording.modules.items(), key=lambda item: item[1])
    ]
    bundle = {
        "type": "intel-pt",
        "cpuInfo": SOFTWARE_CPU,
        "processes": [
            {"pid": recording.pid, "triple": "x86_64-unknown-linux-gnu", "threads": threads, "modules": modules}
        ],
    }
    if recording.tsc_zero_ns is not None:
        # The recorder's TSC counts nanoseconds of CLOCK_MONOTONIC.
        bundle["tscPerfZeroConversion"] = {"timeMult": 1, "timeShift": 0, "timeZero": recording.tsc_zero_ns}
    path = os.path.join(outdir, "trace.json")
    with open(path, "w") as out:
        json.dump(bundle, out, indent=2)
        out.write("\n")
    status = {
        "program": recording.program,
        "args": recording.args,
        "status": recording.status,
        "detail": recording.detail,
        "instructions": {str(tid): len(flow.truth.addresses) for tid, flow in recording.threads.items()},
        "seconds": round(recording.seconds, 3),
    }
    with open(os.path.join(outdir, "recording.json"), "w") as out:
        json.dump(status, out, indent=2)
        out.write("\n")
    return path
