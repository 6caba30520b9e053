"""test_traces/src/crash.c recorded with ``lldb-trace record`` and its cores from GDB, for tests/test_core_files.py.

``make_cases(folder)`` builds, records and takes every core once: the crash's core (the trace's own end), a
core at ``descend``'s entry for a recording ``--until descend``, a core at ``main`` (another moment), a core of
another build of the program (other build-id, same code), and a perf.data recording of the crash.
"""

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .gcore import set_core_pid, take_core
from .paths import SOURCES

OTHER_BUILD_ID = "0x" + "ab" * 20  # as long as gcc's sha1 build-id: the code stays where it was


@dataclass
class CoreCases:
    program: Path
    bundle: Path  # the crash recorded as a JSON bundle (trace.json), with no coreFile
    pid: int  # its process
    core: Path  # the crash's core, made the recording's process's
    until_bundle: Path  # recorded --until descend
    until_core: Path
    main_core: Path  # stopped at main: the recording's pid, another moment
    other_build_core: Path  # the crash of a build with another build-id
    foreign_core: Path  # the crash's core as GDB wrote it: another pid
    perf_data: Path
    perf_core: Path  # the crash's core, made the perf.data's process's


def record(program, folder, *options):
    """``lldb-trace record`` of ``program`` into ``folder``; the recorded pid."""
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(folder), *options, "--", str(program)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    if (folder / "trace.json").exists():
        return json.loads((folder / "trace.json").read_text())["processes"][0]["pid"]
    return int(json.loads((folder / "recording.json").read_text())["instructions"].popitem()[0])


def _core_of(program, core, pid, stop_at=None):
    take_core(program, core, stop_at)
    set_core_pid(core, pid)
    return core


def make_cases(folder):
    folder = Path(folder)
    program, other = folder / "crash", folder / "crash-other-build"
    source = str(SOURCES / "crash.c")
    subprocess.run(["gcc", "-O0", "-g", "-no-pie", "-o", str(program), source], check=True)
    flags = ["-O0", "-g", "-no-pie", f"-Wl,--build-id={OTHER_BUILD_ID}"]
    subprocess.run(["gcc", *flags, "-o", str(other), source], check=True)
    pid = record(program, folder / "bundle", "--psb-period", "256")  # its end decodes alone
    until_pid = record(program, folder / "until", "--until", "descend")
    perf_pid = record(program, folder / "perf", "--format", "perf")
    foreign = take_core(program, folder / "foreign.core")
    core = folder / "crash.core"
    shutil.copyfile(foreign, core)
    set_core_pid(core, pid)
    perf_core = folder / "perf.core"
    shutil.copyfile(foreign, perf_core)
    set_core_pid(perf_core, perf_pid)
    return CoreCases(
        program=program,
        bundle=folder / "bundle" / "trace.json",
        pid=pid,
        core=core,
        until_bundle=folder / "until" / "trace.json",
        until_core=_core_of(program, folder / "until.core", until_pid, "descend"),
        main_core=_core_of(program, folder / "main.core", pid, "main"),
        other_build_core=_core_of(other, folder / "other.core", pid),
        foreign_core=foreign,
        perf_data=folder / "perf" / "perf.data",
        perf_core=perf_core,
    )


def with_keys(bundle, name, process=None, threads=()):
    """A copy of the JSON ``bundle`` beside it, called ``name``, with ``process`` keys set on its process (None
    removes one) and ``threads`` (thread objects) added; its path."""
    document = json.loads(bundle.read_text())
    entry = document["processes"][0]
    for key, value in (process or {}).items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    entry["threads"] += list(threads)
    path = bundle.parent / name
    path.write_text(json.dumps(document))
    return path
