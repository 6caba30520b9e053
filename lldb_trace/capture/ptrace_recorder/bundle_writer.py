"""Writes a Recording as a trace bundle: what ``trace save`` writes, plus the recorder's own files.

Layout of OUTDIR: the saver's bundle (``trace.json``, ``traces/<tid>.intelpt_trace``, with
``copy_program`` the executable under ``modules/``; with ``--format perf``, ``perf.data`` instead of
the first two), ``cores/start.core`` and ``cores/end.core`` (the process where recording started and
ended, named by the bundle's process; beside perf.data too, loaded with ``trace load perf.data --core
cores/end.core``), ``syscalls/<tid>.json`` (each thread's syscall results, named by its thread; JSON
bundle only), then ``ground_truth/<tid>.txt`` and ``recording.json`` (how the recording ended, the
pids of the processes it created that ran untraced, and every file written).  The whole folder appears
at once; an earlier recording there is replaced only when forced, and a folder holding anything the
recorder did not write only gets the bundle's files added (see bundle.saver.write_files).
"""

import json
import os
from dataclasses import replace
from pathlib import Path

from ...bundle.model import TscConversion
from ...bundle.saver import SaveModule, SaveProcess, SaveThread, bundle_files, copy_name, destination_mode, write_files
from ...elf_info import ElfInfo
from ...given_paths import given_path
from ...perf_data.writer import perf_data_bytes
from ..cpu import SOFTWARE_CPU

BUNDLE_FILE = "trace.json"
PERF_DATA_FILE = "perf.data"
RECORDING_FILE = "recording.json"
TRIPLE = "x86_64-unknown-linux-gnu"


def write_bundle(recording, outdir, copy_program=False, force=False, file_format="json"):
    """Write the bundle into ``outdir``; returns the path of trace.json (perf.data with ``file_format`` "perf")."""
    modules = tuple(
        SaveModule(path, Path(path), address, ElfInfo(path).build_id, copy=copy_program and path == recording.program)
        for path, address in sorted(recording.modules.items(), key=lambda item: item[1])
    ) + tuple(_in_memory(name, address, data, outdir, file_format) for name, address, data in recording.memory_modules)
    syscalls = {tid: f"syscalls/{tid}.json" for tid in recording.syscall_results}
    registers = {tid: f"registers/{tid}.npz" for tid in recording.register_states}
    threads = tuple(
        SaveThread(
            tid,
            recording.streams[tid],
            recording.stops.get(tid),
            syscall_results=syscalls.get(tid),
            register_states=registers.get(tid),
        )
        for tid in sorted(recording.threads, key=lambda tid: (tid != recording.pid, tid))
    )  # the main thread first, then as they were made (tids grow): LLDB numbers them so, as it numbers a core's
    cores = {name: f"cores/{name}" for name in (recording.cores.paths if recording.cores else {})}
    conversion = None
    if recording.tsc_zero_ns is not None:  # the recorder's TSC counts nanoseconds of CLOCK_MONOTONIC
        conversion = TscConversion(1, 0, recording.tsc_zero_ns)
    process = SaveProcess(
        recording.pid,
        TRIPLE,
        threads,
        modules,
        tuple(recording.untraced_children),
        untraced_threads=tuple(recording.untraced_threads),
        core_file=cores.get("end.core"),
        start_core_file=cores.get("start.core"),
    )
    cpu = replace(SOFTWARE_CPU, clock=recording.clock)
    main_file = BUNDLE_FILE
    if file_format == "perf":  # the trace as perf.data; the program is named by its path (copied under modules/)
        main_file = PERF_DATA_FILE
        files = {main_file: perf_data_bytes(process, cpu, conversion)}
        files.update(
            {k: v for k, v in bundle_files(BUNDLE_FILE, SOFTWARE_CPU, [process]).items() if k.startswith("modules/")}
        )
    else:
        files = bundle_files(BUNDLE_FILE, cpu, [process], tsc_conversion=conversion)
        files.update({syscalls[tid]: text for tid, text in recording.syscall_results.items()})
        files.update({registers[tid]: data for tid, data in recording.register_states.items()})
    files.update({cores[name]: Path(path) for name, path in recording.cores.paths.items()} if cores else {})
    for tid, flow in recording.threads.items():
        files[f"ground_truth/{tid}.txt"] = flow.truth.write
    files[RECORDING_FILE] = json.dumps(_status(recording, sorted([*files, RECORDING_FILE])), indent=2) + "\n"
    write_files(outdir, main_file, files, force, own_folder=earlier_recording)
    return os.path.join(outdir, main_file)


def _in_memory(name, address, data, outdir, file_format):
    """A module with no file (the vdso): its bytes are written into the bundle, where a perf.data names it."""
    module = SaveModule(name, None, address, None, contents=data)
    return replace(module, path=Path(os.path.abspath(outdir), copy_name(module))) if file_format == "perf" else module


def check_outdir(outdir, force=False):
    """Refuse ``outdir`` before recording, for what would refuse the bundle after it (SaveError)."""
    destination_mode(given_path(outdir, "the recording (a new or empty folder)"), BUNDLE_FILE, (), force,
                     own_folder=earlier_recording)  # fmt: skip


def _status(recording, files):
    return {
        "program": recording.program,
        "args": recording.args,
        "status": recording.status,
        "detail": recording.detail,
        "instructions": {str(tid): len(flow.truth.addresses) for tid, flow in recording.threads.items()},
        "untracedChildren": recording.untraced_children,
        "coreProblems": recording.cores.problems if recording.cores else [],
        "seconds": round(recording.seconds, 3),
        "files": files,
    }


def earlier_recording(folder):
    """True when everything in ``folder`` is a recording's, as its recording.json lists it: it may all go."""
    try:
        listed = set(json.loads((Path(folder) / RECORDING_FILE).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    for root, folders, names in os.walk(folder):
        links = [name for name in folders if os.path.islink(os.path.join(root, name))]
        for name in [*names, *links]:
            if os.path.relpath(os.path.join(root, name), folder) not in listed:
                return False
    return True
