"""GDB driven over `lldb-trace serve --stdio`, and its answers set against the committed `record full` answers."""

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .paths import HISTORY, ROOT

DRIVER = Path(__file__).with_name("gdb_remote_driver.py")
SERVE = f"{sys.executable} -m lldb_trace.cli serve --stdio"
NO_MORE_HISTORY = "No more reverse-execution history."
END_OF_HISTORY = (NO_MORE_HISTORY, "Reached end of recorded history; stopping.")  # GDB 13; GDB 14 and later
BREAKPOINT_STOP = re.compile(r"^(Temporary breakpoint|Breakpoint) \d+, ", re.MULTILINE)
ANSWER = re.compile(r"^@@answer (.*)@@$", re.MULTILINE)
SETTINGS = ["set pagination off", "set confirm off", "set width 0", "set remotetimeout 60"]


def program_file(bundle):
    """The program's copy in the bundle (GDB reads its symbols and line tables from it)."""
    module = json.loads((bundle / "trace.json").read_text())["processes"][0]["modules"][0]
    return bundle / module["file"]


def gdb_version(gdb="gdb"):
    line = subprocess.run([gdb, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    return int(re.search(r"(\d+)\.\d+", line).group(1))


@dataclass
class Answered:
    """One step as GDB over the server answered it: where the server stands after it, what GDB printed."""

    position: int
    output: str
    error: str | None


@dataclass
class Comparison:
    problems: list = field(default_factory=list)
    checked: int = 0


def ask(name, tmp_path, gdb="gdb", sequences=None):
    """Run the committed sequences of program ``name`` (or ``sequences``) in GDB over the server; the
    answers by (sequence number, step number)."""
    bundle = HISTORY / name
    reference = json.loads((bundle / "gdb.json").read_text())
    plan = {
        "setup": [*SETTINGS, f"target remote | {SERVE} {bundle}"],
        "sequences": reference["sequences"] if sequences is None else sequences,
        "end": reference["instruction_count"],
    }
    plan_path = tmp_path / f"{name}-plan.json"
    plan_path.write_text(json.dumps(plan))
    environment = {**os.environ, "REMOTE_PLAN": str(plan_path), "PYTHONPATH": str(ROOT)}
    command = [gdb, "-batch", "-nx", "-x", str(DRIVER), str(program_file(bundle))]
    run = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600, cwd=ROOT)
    answers = {}
    for found in ANSWER.finditer(run.stdout):
        answer = json.loads(found.group(1))
        begin = f"@@step {answer['sequence']} {answer['step']} begin@@"
        end = f"@@step {answer['sequence']} {answer['step']} end@@"
        output = run.stdout.split(begin, 1)[1].split(end, 1)[0]
        answers[(answer["sequence"], answer["step"])] = Answered(answer["position"], output, answer["error"])
    if not answers:
        raise AssertionError(f"GDB answered nothing: {run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    return reference, answers


def compare(reference, answers, version):
    """Every step's position, end-of-history message, breakpoint stop and refusal against GDB's `record full`
    (GDB 13's answer, or a newer GDB's where it answered otherwise and ``version`` is that new)."""
    result = Comparison()
    for number, sequence in enumerate(reference["sequences"]):
        for step in sequence["steps"]:
            answered = answers.get((number, step.get("step")))
            if answered is None:
                continue
            expected = step.get("newer_gdb", step) if version >= 14 else step
            if "expected_fixed" in step and step["from"] == reference["instruction_count"] and _crashed(reference):
                expected = step["expected_fixed"]  # record full logs the faulting instruction; a trace does not
            label = f"{sequence['name']}: step {step['step']} {step['command']!r} from {step['from']}"
            result.checked += 1
            if answered.position != expected["position"]:
                result.problems.append(f"{label}: position {answered.position}, record full {expected['position']}")
                continue
            messages = expected.get("messages", step.get("messages", []))
            if (NO_MORE_HISTORY in messages) != any(words in answered.output for words in END_OF_HISTORY):
                result.problems.append(f"{label}: output {answered.output!r}, record full's messages {messages}")
            if bool(BREAKPOINT_STOP.search("\n".join(messages))) != bool(BREAKPOINT_STOP.search(answered.output)):
                result.problems.append(f"{label}: breakpoint stop differs: {answered.output!r} vs {messages}")
            if (step.get("error") is None) != (answered.error is None):
                result.problems.append(f"{label}: error {answered.error!r}, record full's {step.get('error')!r}")
    return result


def _crashed(reference):
    """Whether the recorded run ended at a fault (the bundle's thread stopped with a signal)."""
    bundle = HISTORY / reference["program"]
    threads = json.loads((bundle / "trace.json").read_text())["processes"][0]["threads"]
    return any("signal" in thread.get("stopReason", {}) for thread in threads)
