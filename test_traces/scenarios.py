"""The recipes of the committed trace scenarios: what to build and how to record it.

``python test_traces/regenerate.py`` rebuilds every scenario directory from
these recipes; the tests use the same recipes to re-record a scenario when the
machine's shared libraries differ from the ones a committed bundle names.
"""

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lldb_trace.capture.ptrace_recorder.bundle_writer import write_bundle
from lldb_trace.capture.ptrace_recorder.recording import RecordOptions, record
from lldb_trace.elf_info import ElfInfo

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"
DYNAMIC = ["-O0", "-g", "-pthread"]
FREESTANDING = ["-O0", "-g", "-nostdlib", "-static", "-no-pie", "-fno-stack-protector", "-Wl,--build-id=sha1"]


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    cflags: tuple
    options: RecordOptions = field(default_factory=RecordOptions)
    missing_module: str | None = None  # a module left out of the bundle: its code decodes as gaps
    committed: bool = True


SCENARIOS = [
    Scenario("basic", "basic.c", (*DYNAMIC, "-pie"), RecordOptions(psb_period=512)),
    Scenario("static", "static.c", tuple(FREESTANDING), RecordOptions(from_start=True)),
    Scenario("threads", "threads.c", (*DYNAMIC, "-no-pie"), RecordOptions(all_threads=True, psb_period=1024)),
    Scenario("timestamps", "basic.c", tuple(DYNAMIC), RecordOptions(tsc=True, psb_period=512)),
    Scenario(
        "cycles", "basic.c", tuple(DYNAMIC), RecordOptions(tsc=True, mtc_period=9, cycle_accurate=True, psb_period=512)
    ),
    Scenario("overflow", "basic.c", tuple(DYNAMIC), RecordOptions(overflow_at=1500, overflow_lost=200)),
    Scenario("snapshot", "basic.c", tuple(DYNAMIC), RecordOptions(buffer_kb=1, psb_period=256)),
    Scenario("missing-module", "basic.c", tuple(DYNAMIC), RecordOptions(psb_period=256), missing_module="libc.so.6"),
    Scenario("crash", "crash.c", (*DYNAMIC, "-no-pie"), RecordOptions()),
    Scenario("million", "million.c", tuple(DYNAMIC), RecordOptions(psb_period=8192), committed=False),
]

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def build(scenario, directory):
    """Compile the scenario's program into ``directory``; returns its path."""
    binary = Path(directory) / Path(scenario.source).stem
    subprocess.run(["gcc", *scenario.cflags, "-o", str(binary), str(SOURCES / scenario.source)], check=True)
    return binary


def make(scenario, outdir):
    """Build, record and write the scenario's bundle into ``outdir`` (replaced: this script owns test_traces/)."""
    outdir = Path(outdir)
    if outdir.exists():
        shutil.rmtree(outdir)
    with tempfile.TemporaryDirectory(prefix=f"lldb-trace-{scenario.name}-") as build_dir:
        binary = build(scenario, build_dir)
        recording = record(str(binary), [], scenario.options)
        write_bundle(recording, str(outdir), copy_program=True)
    if scenario.missing_module:
        _hide_module(outdir / "trace.json", scenario.missing_module)
    return outdir / "trace.json"


def _hide_module(bundle_path, name):
    bundle = json.loads(bundle_path.read_text())
    process = bundle["processes"][0]
    process["modules"] = [m for m in process["modules"] if os.path.basename(m["systemPath"]) != name]
    bundle_path.write_text(json.dumps(bundle, indent=2) + "\n")


def modules_match(bundle_path):
    """True when every module file the bundle names exists here with the recorded build id."""
    bundle_path = Path(bundle_path)
    bundle = json.loads(bundle_path.read_text())
    for module in bundle["processes"][0]["modules"]:
        path = bundle_path.parent / module.get("file", module["systemPath"])
        if not path.exists() or ElfInfo(path).build_id != module.get("uuid"):
            return False
    return True
