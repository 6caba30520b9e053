"""Replays GDB's committed answers (NAME/gdb.json) against lldb_trace.history on NAME's bundle.

Each step is asked from the position GDB asked it from (``from``), so one disagreement does not
move every later step; a step asked from where the step before left the thread goes on from there,
so that what a movement leaves behind (a reverse-finish, for the reverse-step after it) carries
over.  A step agrees when our position is the expected one (``expected_fixed`` where GDB 13 is known
wrong, else GDB 13's), the frames there are the expected frames, the end of history is reported at
the same steps, a breakpoint stop names its breakpoint, and a command GDB refused ('"finish" not
meaningful in the outermost frame.') is refused.  A step the capture marked
``known_disagreement`` (expected_fixed.py says why) is reported apart and must still disagree.

Frames are compared as (function, pc) from frame #0 outwards, frame #0 by name only (its pc is the
position's).  GDB's virtual frames are not frames of the trace's model and are left out of GDB's
list: a "tailcall" frame (GDB builds it from DWARF call-site data; a tail call replaces the frame)
and a "sigtramp" frame below a handler (the kernel's signal frame; the handler's frame is
asynchronous instead, its caller's pc where the interrupted code resumes).  GDB's list also stops at its first frame
without a name: it has unwound past the stack's origin (a makecontext stack's __start_context).

``python test_traces/history/replay.py [NAME ...]`` prints every disagreement.
"""

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from lldb_trace import api  # noqa: E402
from lldb_trace.history import NO_MORE_HISTORY, HistoryError, ThreadHistory  # noqa: E402

MOVEMENTS = {
    name: (method, reverse)
    for method in ("stepi", "nexti", "step", "next", "finish")
    for name, reverse in ((method, False), (f"reverse-{method}", True))
}
VIRTUAL_FRAMES = ("tailcall", "sigtramp")
BREAKPOINT_STOP = re.compile(r"^(Temporary breakpoint|Breakpoint) \d+, ")


def program_names():
    """The programs with committed GDB answers, in name order."""
    return sorted(path.parent.name for path in HERE.glob("*/gdb.json"))


def load_reference(name):
    return json.loads((HERE / name / "gdb.json").read_text())


@dataclass
class Replayed:
    """What replaying one sequence found: disagreements, the known ones (label, why, what), steps checked."""

    problems: list = field(default_factory=list)
    known: list = field(default_factory=list)
    checked: int = 0

    @property
    def stale(self):
        """Known disagreements that no longer disagree."""
        return [label for label, _, found in self.known if not found]


@dataclass
class Outcome:
    """What our history did for one step: the position and message after it, or the error it raised."""

    position: int
    message: str | None = None
    breakpoint: int | None = None
    error: str | None = None


@dataclass
class Program:
    """One bundle opened once, with a fresh ThreadHistory per sequence."""

    name: str
    reference: dict = field(repr=False)

    def __post_init__(self):
        self.thread = api.open_bundle(HERE / self.name).threads[0]
        self.symbolizer = self.thread.symbolizer

    def history(self):
        return ThreadHistory(self.thread)

    def locate(self, address):
        return self.symbolizer.locate(address)

    # -- breakpoints --------------------------------------------------------------------------------

    def resolve(self, spec):
        """Load addresses of a GDB breakpoint spec: ``*FUNC``, ``*0xADDR``, ``FILE:LINE`` or ``FUNC``.

        ``break FUNC`` stops after the prologue, as GDB's does; ``*FUNC`` at the function's entry."""
        if spec.startswith("*0x"):
            return [int(spec[1:], 16)]
        if spec.startswith("*"):
            return self.symbolizer.function_entries(spec[1:])
        file_line = re.fullmatch(r"(.+):(\d+)", spec)
        if file_line:
            return self.symbolizer.line_starts(file_line.group(1), int(file_line.group(2)))
        entries = self.symbolizer.function_entries(spec)
        return [self.symbolizer.prologue_end(entry) or entry for entry in entries]

    # -- one sequence ---------------------------------------------------------------------------------

    def replay(self, sequence):
        """A Replayed sequence: the disagreements (strings) of its steps and how many steps were checked."""
        history, breakpoints, result = self.history(), {}, Replayed()
        start = sequence["start"]["position"]
        history.goto(start)
        result.problems += [
            f"start {start}: {p}" for p in guarded(self.frame_problems, history, start, sequence["start"])
        ]
        for step in sequence["steps"]:
            if "skipped" not in step:
                found = [f"{self.label(step)}: {p}" for p in guarded(self.check_step, history, step, breakpoints)]
                if "known_disagreement" in step:
                    result.known.append((self.label(step), step["known_disagreement"], found))
                else:
                    result.problems += found
                result.checked += 1
            self.update_breakpoints(step["command"], breakpoints)
        return result

    def check_step(self, history, step, breakpoints):
        if history.position != step["from"]:  # where the step before left it, GDB's state goes on (reverse-finish)
            history.goto(step["from"])
        problems = []
        wanted = [bp["addresses"] for bp in step.get("breakpoints", [])]
        if sorted(map(sorted, breakpoints.values())) != sorted(map(sorted, wanted)):
            problems.append(f"breakpoints {list(breakpoints.values())}, GDB's {wanted}")
        outcome = self.run(history, step["command"], breakpoints)
        return problems + self.step_problems(history, step, outcome)

    def label(self, step):
        return f"step {step['step']} {step['command']!r} from {step['from']}"

    def update_breakpoints(self, command, breakpoints):
        if command.startswith("break "):
            spec = command.split(None, 1)[1]
            breakpoints[spec] = self.resolve(spec)
        elif command == "delete":
            breakpoints.clear()

    def run(self, history, command, breakpoints):
        """Run one GDB command on our history; break/delete only change the breakpoints (update_breakpoints)."""
        words = command.split()
        addresses = [address for found in breakpoints.values() for address in found]
        try:
            if words[0] in MOVEMENTS:
                method, reverse = MOVEMENTS[words[0]]
                movement = getattr(history, method)(reverse=reverse, breakpoints=addresses)
            elif words[0] in ("continue", "reverse-continue"):
                movement = history.continue_(addresses, reverse=words[0] == "reverse-continue")
            elif words[:2] == ["record", "goto"]:
                target = {"begin": 0, "start": 0, "end": history.end}.get(words[2])
                movement = history.goto(int(words[2]) if target is None else target)
            elif words[0] in ("break", "delete"):
                return Outcome(history.position)
            else:
                raise ValueError(f"the replay does not know GDB's command {command!r}")
        except HistoryError as error:
            return Outcome(history.position, error=str(error))
        return Outcome(movement.position, movement.message, movement.breakpoint)

    # -- comparing ------------------------------------------------------------------------------------

    def step_problems(self, history, step, outcome):
        expected = step.get("expected_fixed", step)
        problems = []
        gdb_error = step.get("error")
        if gdb_error is not None and gdb_error != "Already at target insn.":
            if outcome.error != gdb_error:
                problems.append(f"GDB refused with {gdb_error!r}, we gave {outcome.error!r}")
        elif outcome.error is not None:
            problems.append(f"we refused with {outcome.error!r}")
        if outcome.position != expected["position"]:
            fixed = " (expected_fixed)" if "expected_fixed" in step else ""
            problems.append(
                f"position {outcome.position} ({self.where(history, outcome.position)}), "
                f"expected {expected['position']}{fixed} ({self.where(history, expected['position'])})"
            )
            return problems
        messages = expected.get("messages", step.get("messages", []))
        if (NO_MORE_HISTORY in messages) != (outcome.message == NO_MORE_HISTORY):
            problems.append(f"message {outcome.message!r}, GDB's {messages}")
        if any(BREAKPOINT_STOP.match(m) for m in messages) != (outcome.breakpoint is not None):
            problems.append(f"breakpoint stop {outcome.breakpoint}, GDB's messages {messages}")
        return problems + self.frame_problems(history, outcome.position, expected)

    def where(self, history, position):
        location = self.locate(history.pc_at(position))
        return f"{location.function} {location.source or hex(history.pc_at(position))}"

    def frame_problems(self, history, position, expected):
        ours = self.our_frames(history, position)
        gdbs = gdb_frames(expected["frames"])
        same = len(ours) == len(gdbs) and all(
            pc == gdb_pc and self.same_function(name, gdb_name)
            for (name, pc), (gdb_name, gdb_pc) in zip(ours, gdbs, strict=True)
        )
        return [] if same else [f"frames {describe(ours)}, expected {describe(gdbs)}"]

    def same_function(self, ours, gdbs):
        """Do our symbol and GDB's name one function?  GDB prints C++ names demangled without their
        parameters, prefers a global alias (qsort_r for __qsort_r) and drops a clone's number (.0)."""
        if ours == gdbs:
            return True
        if ours is None or gdbs is None:
            return False
        if _unmangled(ours) == gdbs or re.sub(r"\.\d+$", "", ours) == gdbs:
            return True
        return bool(set(self.symbolizer.function_entries(ours)) & set(self.symbolizer.function_entries(gdbs)))

    def our_frames(self, history, position):
        """(function, pc) innermost first; frame #0's pc is None, an outer frame's is where it resumes (GDB's
        frame pc), and each is named by where it stands (an outer frame at its call)."""
        frames = history.frames_at(position)
        found = [(self.locate(frames[0].pc).function, None)]
        for frame in frames[1:]:
            found.append((self.locate(frame.pc).function, frame.resumes_at))
        return found


def _unmangled(name):
    """A plain Itanium-mangled function's name (``_Z5afteri`` is ``after``); others unchanged."""
    found = re.match(r"_Z(\d+)", name)
    return name[found.end() : found.end() + int(found.group(1))] if found else name


def guarded(check, *arguments):
    """The problems ``check`` finds, or the exception our code raised (a crash is a disagreement too)."""
    try:
        return check(*arguments)
    except Exception as error:  # reported with the step, not fatal to the other steps
        return [f"raised {type(error).__name__}: {error}"]


def gdb_frames(frames):
    """GDB's frames as (function, pc), frame #0's pc None, its virtual frames left out (see the docstring)."""
    found = []
    for number, frame in enumerate(frames):
        if frame["type"] in VIRTUAL_FRAMES and number:
            continue
        if frame["function"] is None and number:
            break
        found.append((frame["function"], frame["pc"] if number else None))
    return found


def describe(frames):
    return " < ".join(name if pc is None else f"{name}@{pc:#x}" for name, pc in frames)


def main(names):
    steps = problems = known = 0
    for name in names or program_names():
        program = Program(name, load_reference(name))
        for sequence in program.reference["sequences"]:
            result = program.replay(sequence)
            steps, problems, known = steps + result.checked, problems + len(result.problems), known + len(result.known)
            for problem in result.problems:
                print(f"{name} / {sequence['name']}: {problem}")
            for label, why, found in result.known:
                print(f"{name} / {sequence['name']}: known, {label}: {why}" + ("" if found else " (NOW AGREES)"))
    print(f"{steps} steps checked, {problems} disagreements, {known} known disagreements")


if __name__ == "__main__":
    main(sys.argv[1:])
