"""Build, record and ask GDB 13.1: `.venv/bin/python test_traces/history/capture_gdb.py [NAME ...]`.

For each program of catalogue.py: compile it into /tmp/lldb-trace-history/NAME/ (a fixed path: the
stack's layout, and so the run, must be the same under the recorder and under GDB), record it with
the project's recorder into test_traces/history/NAME/ (replaced), check the bundle decodes to the
recorder's ground truth, then replay the same run in GDB's `record full` (gdb_driver.py) and save
every answer to NAME/gdb.json.  --keep-recordings asks GDB again about the committed recordings
(their program copied back to where it ran), so the bundles stay as they are.  --same-run records
again without asking GDB: when the new run is the committed one instruction for instruction, the
bundle is replaced (it gains what the recorder writes now: cores, register states) and GDB's answers
are kept.  Fails loudly when gdb is missing, is not 13.1, or ran another path.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from catalogue import BY_NAME, PROGRAMS, sequences_of
from expected_fixed import compare_newer, mark_fixed_behaviour

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from lldb_trace import api  # noqa: E402
from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402

BUILD_ROOT = Path("/tmp/lldb-trace-history")
RECORDER = ROOT / ".venv" / "bin" / "lldb-trace"
GDB_VERSION = (13, 1)
# GDB 13's `record full` cannot record VEX (AVX) instructions, and static glibc picks AVX2 string
# functions on CPUs that have them: the tunable makes it pick SSE2 ones, under GDB and the recorder alike.
ENVIRONMENT = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX_Fast_Unaligned_Load,-AVX2,-AVX,-ERMS,-FSRM"}
RECORD_TIMEOUT = 600  # seconds; the recorder runs ~16k instructions/s
GDB_TIMEOUT = 1800  # seconds; GDB records ~8k instructions/s and replays ~120k/s
SETTINGS = [
    "set pagination off",
    "set confirm off",
    "set width 0",
    "set height 0",
    "set startup-with-shell off",
    "unset environment",
    *(f"set environment {name} {value}" for name, value in ENVIRONMENT.items()),
    "set record full insn-number-max unlimited",
    "set debuginfod enabled off",
    "handle SIGUSR1 stop print pass",  # signal_handler's raise(): gdb_driver.py delivers it with a stepi
]
MARKER = re.compile(r"\n?@@history-step (\d+) (begin|end)@@\n")
NUMBERING = (
    "position is the trace index (0 = main's first instruction, not yet executed; instruction_count = where "
    "the thread stopped); gdb_number is GDB 13's own instruction number there.  They are equal until a "
    "rep-prefixed string instruction runs (GDB logs each of its iterations as an instruction, the trace has "
    "one item for it: rep_iterations counts the extra log entries) or a signal is delivered (GDB logs its "
    "stop and its delivery at the interrupted pc, the trace goes straight into the handler: signal_entries).  "
    "`record goto N` takes GDB's number and leaves pc at that instruction, not yet executed; `record goto "
    "begin` is 0; at the end GDB leaves replay mode ('Record mode', no current number)"
)


def build(program):
    """Compile into the fixed build folder; returns the binary and the exact commands."""
    directory = BUILD_ROOT / program.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    commands, objects = [], []
    for source in program.nodebug_sources:
        obj = directory / (Path(source).stem + ".o")
        commands.append(["gcc", "-O0", "-c", "-o", str(obj), str(HERE.parent / "src" / source)])
        objects.append(str(obj))
    binary = directory / program.name
    sources = [str(HERE.parent / "src" / source) for source in program.sources]
    commands.append([program.compiler, *program.flags, "-o", str(binary), *sources, *objects])
    for command in commands:
        subprocess.run(command, check=True)
    return binary, commands


def record(program, binary):
    """Record with the project's recorder, exactly as a user would; returns the bundle's folder."""
    bundle = HERE / program.name
    shutil.rmtree(bundle, ignore_errors=True)
    until = ["--until", program.stop] if program.stop else []
    command = [str(RECORDER), "record", "-o", str(bundle), "--copy-program", *until, "--", str(binary)]
    started = time.monotonic()
    subprocess.run(command, env=ENVIRONMENT, check=True, timeout=RECORD_TIMEOUT)
    return bundle, command, round(time.monotonic() - started, 1)


def check_decoding(bundle):
    """The bundle must decode to the recorder's ground truth; returns the tid and the addresses."""
    thread = api.open_bundle(bundle).threads[0]
    truth = list(GroundTruth.read(bundle / "ground_truth" / f"{thread.tid}.txt").addresses)
    if [item.address for item in thread.items()] != truth:
        raise SystemExit(f"{bundle}: the trace does not decode to its ground truth")
    return thread.tid, truth


def plan_for(program, truth):
    stop = [f"break *{program.stop}", "continue"] if program.stop else ["continue"]
    return {
        "settings": SETTINGS,
        "setup": ["break *main", "run", "record full", *stop, "delete"],
        "ground_truth": truth,
        "sequences": sequences_of(program),
    }


def gdb_version(gdb):
    """GDB's version line, e.g. 'GNU gdb (Debian 13.1-3) 13.1', and its (major, minor)."""
    line = subprocess.run([gdb, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    major, minor = re.search(r"(\d+)\.(\d+)\S*$", line).groups()
    return line, (int(major), int(minor))


def ask_gdb(gdb, binary, plan):
    """Run gdb_driver.py in GDB over the plan; returns its answers, with GDB's text for each step."""
    version, _ = gdb_version(gdb)
    with tempfile.TemporaryDirectory(prefix="lldb-trace-gdb-") as scratch:
        plan_path, answers_path = Path(scratch, "plan.json"), Path(scratch, "answers.json")
        plan_path.write_text(json.dumps(plan))
        command = [gdb, "-batch", "-nx", "-x", str(HERE / "gdb_driver.py"), str(binary)]
        env = {**os.environ, "HISTORY_PLAN": str(plan_path), "HISTORY_ANSWERS": str(answers_path)}
        started = time.monotonic()
        run = subprocess.run(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=GDB_TIMEOUT
        )
        seconds = round(time.monotonic() - started, 1)
        failed = re.search(r"@@history-failed (.*)@@", run.stdout)
        if failed or run.returncode != 0 or not answers_path.exists():
            tail = run.stdout[-3000:]
            raise SystemExit(f"GDB failed on {binary} ({failed.group(1) if failed else run.returncode}):\n{tail}")
        answers = json.loads(answers_path.read_text())
    outputs = step_outputs(run.stdout)
    for sequence in answers["sequences"]:
        for step in sequence["steps"]:
            if step and "step" in step:
                step["output"] = outputs[step["step"]]
    setup = [{"command": c, "output": outputs[n]} for n, c in enumerate(plan["setup"])]
    return answers, {"version": version, "command": command, "setup": setup, "seconds": seconds}


def step_outputs(stdout):
    """GDB's text between each step's markers, by step number."""
    outputs, pieces = {}, MARKER.split(stdout)
    for index in range(1, len(pieces) - 2, 3):
        if pieces[index + 1] == "begin":
            outputs[int(pieces[index])] = pieces[index + 2].strip("\n")
    return outputs


def find_gdbs(newer_gdb):
    """Debian's GDB 13.1 (the reference) and a GDB >= 14 (where GDB 13's known reverse-stepping bugs are fixed)."""
    gdb = shutil.which("gdb")
    if gdb is None:
        raise SystemExit("gdb is not installed: the reference needs GDB 13.1 (apt-get install gdb)")
    line, version = gdb_version(gdb)
    if version != GDB_VERSION:
        raise SystemExit(f"{line}: the committed answers come from GDB 13.1 (Debian bookworm's); run this where it is")
    if newer_gdb is None or not Path(newer_gdb).is_file():
        raise SystemExit(
            "pass --newer-gdb PATH, a GDB >= 14 for the expected_fixed marks "
            "(python3 -m venv /tmp/gdbnew && /tmp/gdbnew/bin/pip install gdb-for-pwndbg==18.1.0.post1)"
        )
    line, version = gdb_version(newer_gdb)
    if version < (14, 0):
        raise SystemExit(f"{line}: --newer-gdb must be GDB 14 or later")
    return gdb, newer_gdb


def pinned(plan, answers):
    """The same plan, each step asked from the position GDB 13 asked it from (for the newer GDB).

    Skipped: `record goto` (GDB 18 numbers from 1 and its `record goto end` is the last recorded
    instruction, one before the end) and movements from or to either end of history, where GDB 18
    differs by design or by bug: going forward onto the end it goes on recording the live process,
    and a reverse command at the beginning shifts its instruction numbers."""
    ends = (0, answers["instruction_count"])

    def step(answered):
        skip = "skipped" in answered or answered["command"].startswith("record goto")
        skip = skip or ((answered["from"] in ends or answered["position"] in ends) and moves(answered["command"]))
        return {"command": answered["command"], "from": answered["from"], "skip": skip}

    sequences = [
        {**spec, "steps": [step(answered) for answered in sequence["steps"]]}
        for spec, sequence in zip(plan["sequences"], answers["sequences"], strict=True)
    ]
    return {**plan, "sequences": sequences}


def moves(command):
    return not command.startswith(("break", "tbreak", "delete", "info", "bt", "up", "down", "frame"))


def ask_both(program, binary, truth, gdbs):
    """GDB 13's answers, each step compared with a newer GDB's from the same position.

    Both GDBs' drivers have checked every instruction of their run against the ground truth."""
    plan = plan_for(program, truth)
    answers, gdb_run = ask_gdb(gdbs[0], binary, plan)
    newer, newer_run = ask_gdb(gdbs[1], binary, pinned(plan, answers))
    compare_newer(answers, newer, newer_run)
    return answers, gdb_run


def capture(program, gdbs, keep_recording=False):
    if keep_recording:
        binary, build_commands, recorder = kept(program)
        bundle = HERE / program.name
    else:
        binary, build_commands = build(program)
        bundle, record_command, record_seconds = record(program, binary)
        recorder = {"command": record_command, "seconds": record_seconds}
    tid, truth = check_decoding(bundle)
    answers, gdb_run = ask_both(program, binary, truth, gdbs)
    reference = {
        "program": program.name,
        "purpose": program.purpose,
        "build": build_commands,
        "environment": ENVIRONMENT,
        "recorder": {**recorder, "tid": tid},
        "gdb": {**gdb_run, "settings": SETTINGS, "driver": "gdb_driver.py"},
        "numbering": NUMBERING,
        **answers,
    }
    mark_fixed_behaviour(reference)
    (bundle / "gdb.json").write_text(json.dumps(reference, indent=1) + "\n")
    print(f"{program.name}: {len(truth)} instructions; GDB answered in {gdb_run['seconds']} s")


def record_same_run(program):
    """Record again; keep GDB's answers if the run is the committed one, instruction for instruction."""
    bundle = HERE / program.name
    reference = json.loads((bundle / "gdb.json").read_text())
    committed = list(GroundTruth.read(bundle / "ground_truth" / f"{reference['recorder']['tid']}.txt").addresses)
    binary, _build_commands = build(program)
    kept_answers = bundle.with_name(f".{program.name}-gdb.json")
    shutil.copyfile(bundle / "gdb.json", kept_answers)
    try:
        _bundle, record_command, record_seconds = record(program, binary)
        tid, truth = check_decoding(bundle)
    finally:
        shutil.move(kept_answers, bundle / "gdb.json")
    if truth != committed:
        raise SystemExit(f"{program.name}: the new run is not the committed one (git checkout the folder back)")
    reference["recorder"] = {"command": record_command, "seconds": record_seconds, "tid": tid}
    (bundle / "gdb.json").write_text(json.dumps(reference, indent=1) + "\n")
    print(f"{program.name}: the same {len(truth)} instructions, recorded again; GDB's answers kept")


def kept(program):
    """The committed recording's program, put back where it ran; its build commands and recorder run."""
    bundle = HERE / program.name
    if not (bundle / "gdb.json").is_file():
        raise SystemExit(f"{bundle} has no recording to keep: capture {program.name} without --keep-recordings")
    old = json.loads((bundle / "gdb.json").read_text())
    [module] = json.loads((bundle / "trace.json").read_text())["processes"][0]["modules"]
    binary = Path(module["systemPath"])
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundle / module["file"], binary)
    binary.chmod(0o755)
    return binary, old["build"], {key: value for key, value in old["recorder"].items() if key != "tid"}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--newer-gdb", help="a GDB >= 14, for the steps GDB 13 gets wrong")
    parser.add_argument(
        "--keep-recordings", action="store_true", help="ask GDB again about the committed recordings (no rebuild)"
    )
    parser.add_argument(
        "--same-run", action="store_true", help="record again, keep GDB's answers if the run is the same"
    )
    parser.add_argument("names", nargs="*", help=f"programs to capture (default: all of {', '.join(BY_NAME)})")
    options = parser.parse_args(argv)
    unknown = [name for name in options.names if name not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown program(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    chosen = [program for program in PROGRAMS if not options.names or program.name in options.names]
    if options.same_run:
        for program in chosen:
            record_same_run(program)
        return
    gdbs = find_gdbs(options.newer_gdb)
    for program in chosen:
        capture(program, gdbs, options.keep_recordings)


if __name__ == "__main__":
    main(sys.argv[1:])
