"""Runs INSIDE GDB (gdb -batch -x gdb_driver.py): replays one plan's sequences over a `record full` run.

capture_gdb.py writes the plan (JSON, path in $HISTORY_PLAN) and reads the answers this script writes
($HISTORY_ANSWERS).  GDB prints its stop messages ("No more reverse-execution history.", the frame
line) straight to its terminal, where neither `to_string` nor `set logging` catches them in GDB 13,
so every command is framed by marker lines on stdout and capture_gdb.py cuts GDB's output at them.

Before any question, a sweep steps through the whole recorded run once: it checks every pc against
the recorder's ground truth, maps GDB's instruction numbers to trace indices (GDB logs every
iteration of a `rep` string instruction, the trace has one item for it) and keeps each
instruction's frames and line for history_model.py.  GDB also logs a delivered signal as two
entries at the interrupted pc (its stop, then the delivery) where the trace goes straight from the
interrupted instruction into the handler: they count as that instruction, as rep iterations do.
"""

import json
import os
import re
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from history_model import Model, Row

FRAME_TYPES = {
    gdb.NORMAL_FRAME: "normal",
    gdb.DUMMY_FRAME: "dummy",
    gdb.INLINE_FRAME: "inline",
    gdb.TAILCALL_FRAME: "tailcall",
    gdb.SIGTRAMP_FRAME: "sigtramp",
    gdb.ARCH_FRAME: "arch",
    gdb.SENTINEL_FRAME: "sentinel",
}
FORWARD = ("stepi", "nexti", "step", "next", "finish", "continue")
MODELLED = {"reverse-step": True, "reverse-next": False}  # command: enters callees
NON_LOCAL_EXITS = ("next", "step", "finish")  # they end where a longjmp or a caught throw lands
FAULT_REASON = (
    "GDB logs the instruction that faulted, which never completed: stepping back from the end undoes that "
    "log entry alone and leaves pc at the fault; the trace ends at the fault, and one instruction back is "
    "the one before it"
)
MAX_FRAMES = 64
REP_PREFIXES = (0xF2, 0xF3)
RETURN = re.compile(r"((repz|bnd) )?ret")
DELIVERED_SIGNALS = ("SIGUSR1",)  # stopped at, then delivered by a stepi so that `record full` records the handler


class Replay:
    """The run being replayed: where GDB stands in it, and each command's answer."""

    def __init__(self, plan):
        self.plan = plan
        self.step_number = 0
        self.logged = None  # GDB's log length (rep iterations counted one by one)
        self.offset = 0  # GDB's instruction number at trace index 0 (13.1: 0; 18.1: 1)
        self.index_of = []  # GDB instruction number - offset -> trace index
        self.number_of = []  # trace index -> GDB instruction number - offset (before a rep's first iteration)
        self.model = None
        self.signal_pcs = set()  # where a delivered signal interrupted the thread
        self.stop_pc = None  # where the recorded run stopped
        self.faulted = False  # the run stopped at a faulting instruction, which GDB logged

    @property
    def count(self):
        return len(self.number_of) - 1

    def run(self, command):
        """Run one GDB command between markers; returns its marker number and GDB's error, if any."""
        number = self.step_number
        self.step_number += 1
        gdb.write(f"\n@@history-step {number} begin@@\n")
        gdb.flush()
        error = None
        try:
            gdb.execute(command)
        except gdb.error as exc:
            error = str(exc)
        gdb.flush()
        gdb.write(f"\n@@history-step {number} end@@\n")
        gdb.flush()
        return number, error

    def record_info(self):
        text = gdb.execute("info record", to_string=True)
        current = re.search(r"Current instruction number is (\d+)\.", text)
        return {
            "highest": int(re.search(r"Highest recorded instruction number is (\d+)\.", text).group(1)),
            "logged": int(re.search(r"Log contains (\d+) instructions\.", text).group(1)),
            "current": int(current.group(1)) if "Replay mode:" in text else None,
        }

    def gdb_number(self):
        """GDB's position less the offset: 0..logged, logged being the end (record mode)."""
        info = self.record_info()
        if self.logged is not None and info["logged"] != self.logged:
            raise RuntimeError(f"the record log changed from {self.logged} to {info['logged']}")
        return info["highest"] if info["current"] is None else info["current"] - self.offset

    def position(self):
        return self.index_of[self.gdb_number()]

    def state(self):
        frames = []
        frame = gdb.newest_frame()
        while frame is not None and len(frames) < MAX_FRAMES:
            frames.append(describe_frame(frame))
            frame = frame.older()
        top = frames[0]
        number = self.gdb_number()
        return {
            "position": self.index_of[number],
            "gdb_number": number + self.offset,
            **{key: top[key] for key in ("pc", "function", "file", "line")},
            "frames": frames,
        }

    def goto_number(self, number):
        """Move silently to GDB's instruction number (less the offset); `logged` is the end."""
        if self.gdb_number() == number:
            return
        if number == self.logged:
            if self.gdb_number() < number - 1:
                gdb.execute("record goto end", to_string=True)
            if self.gdb_number() != number:  # GDB 18's `record goto end` stops one instruction short
                gdb.execute("stepi", to_string=True)
        else:
            gdb.execute(f"record goto {number + self.offset}", to_string=True)
        if self.gdb_number() != number:
            raise RuntimeError(f"record goto reached {self.gdb_number()}, not {number}")

    def goto(self, index):
        self.goto_number(self.number_of[{"begin": 0, "end": self.count}.get(index, index)])

    def start(self, spec):
        gdb.execute("delete", to_string=True)
        if "goto" in spec:
            self.goto(spec["goto"])
        else:
            self.goto("begin")
            gdb.execute(f"break {spec['hit']}", to_string=True)
            for _ in range(spec.get("count", 1)):
                gdb.execute("continue", to_string=True)
            gdb.execute("delete", to_string=True)
        return self.state()

    def answer(self, command, pinned_from=None):
        if pinned_from is not None:  # a newer GDB asked from exactly where GDB 13 was asked
            self.goto(pinned_from)
        before = self.position()
        if before == self.count and command.split()[0] in FORWARD:
            return {"command": command, "from": before, "skipped": "at the end of history GDB runs the live process"}
        breakpoints = active_breakpoints()
        goto = re.fullmatch(r"record goto (\d+)", command)
        number, error = self.run(f"record goto {int(goto.group(1)) + self.offset}" if goto else command)
        step = {"step": number, "command": command, "from": before, **self.state()}
        if breakpoints:
            step["breakpoints"] = breakpoints
        if error is not None:
            step["error"] = error
        expected = self.expected(command, before, step)
        if expected is not None:
            here = self.gdb_number()
            self.goto(expected["position"])
            step["expected_fixed"] = {**self.state(), "why": expected["why"]}
            self.goto_number(here)
        return step

    def sequence(self, spec):
        steps = []
        start = self.start(spec["start"])
        for command in spec["steps"]:
            if isinstance(command, dict) and "from" in command:  # pinned: {"command": C, "from": P, "skip": S}
                steps.append(None if command["skip"] else self.answer(command["command"], command["from"]))
            elif isinstance(command, dict):  # {"repeat": COMMAND, "max": N}: until it stops moving
                for _ in range(command["max"]):
                    steps.append(self.answer(command["repeat"]))
                    if steps[-1].get("position") in (steps[-1]["from"], self.count, None):
                        break
            else:
                steps.append(self.answer(command))
        return {"name": spec["name"], "purpose": spec["purpose"], "start": start, "steps": steps}

    def expected(self, command, before, step):
        """The model's answer where it differs from GDB's (see history_model.py), with the reason."""
        if self.model is None or "error" in step:
            return None
        if command in ("reverse-stepi", "reverse-nexti") and self.faulted and before == step["position"] == self.count:
            return {"position": self.count - 1, "why": FAULT_REASON}
        if command == "reverse-finish":
            target = self.model.reverse_finish(before)
        elif command in MODELLED:
            target = self.model.reverse_step(before, MODELLED[command])
        elif command in NON_LOCAL_EXITS:
            target = self.model.forward_landing(before)
            target = target if target is not None and target < step["position"] else None
        else:
            return None
        if target is None or target == step["position"]:
            return None
        return {"position": target, "why": self.model_reason(command, before, step["position"], target)}

    def model_reason(self, command, before, got, target):
        if command in NON_LOCAL_EXITS:
            return (
                "GDB cannot see this longjmp or throw (the static glibc has no longjmp probes, libgcc's "
                "_Unwind_DebugHook no debug information), so it waits for a return into a frame that is gone "
                "and runs on (GDB 13 and 18 alike, live too); where it sees them, its longjmp/exception resume "
                "breakpoint ends the command where the jump lands"
            )
        if command == "reverse-finish":
            return (
                "GDB's reverse-finish stops at the function's most recent entry in ANY activation (its "
                "step-resume breakpoint has no frame); under recursion that is a deeper activation. The "
                "call that created the current activation is the answer"
            )
        if got > 0 and self.model.mid_run(got):
            return (
                "GDB 13 stops at a later line-table row of a line (a return point, a second statement, a "
                "column change) instead of the line's first instruction; fixed in GDB 14 "
                "(gdb.reverse/map-to-same-line.exp): the line's run starts earlier"
            )
        if self.model.mid_run(before):
            return (
                "the start position is mid-line by the run rule (a later line-table row's first instruction): "
                "GDB 13 takes it for a line start and goes on to the line before; the run rule goes to the "
                "start of the current line"
            )
        if got < target:
            return (
                "GDB 13 goes past a line that ran just before (a line whose rows lie in separate address "
                "ranges, like a `for` line's init+jump and condition, is not stopped at); the run rule stops "
                "at that line's start"
            )
        return "the run-based rule (a line is a run of one frame's instructions) stops here"


def describe_frame(frame):
    sal = frame.find_sal()
    symtab = sal.symtab
    return {
        "pc": frame.pc(),
        "function": frame.name(),
        "file": os.path.basename(symtab.filename) if symtab else None,
        "line": sal.line if symtab else None,
        "type": FRAME_TYPES.get(frame.type(), str(frame.type())),
    }


def model_row():
    chain = []
    frame = gdb.newest_frame()
    while frame is not None and len(chain) < MAX_FRAMES:
        chain.append(str(frame))
        frame = frame.older()
    newest = gdb.newest_frame()
    sal = newest.find_sal()
    line = (sal.symtab.filename, sal.line) if sal.symtab and sal.line else None
    returns = RETURN.match(newest.architecture().disassemble(newest.pc())[0]["asm"]) is not None
    return Row(tuple(chain), line, newest.type() == gdb.SIGTRAMP_FRAME, returns)


def active_breakpoints():
    return [
        {"spec": bp.location, "addresses": [location.address for location in bp.locations if location.enabled]}
        for bp in gdb.breakpoints()
        if bp.enabled and bp.visible and bp.location
    ]


def record_to_stop(replay, plan):
    """Run from main's first instruction to the recording's stop, recording with `record full`.

    A `continue` that stops for a signal the program handles goes on with a `stepi`, which delivers
    it: GDB records the handler's entry then (continuing would run the handler unrecorded)."""
    stops = []
    gdb.events.stop.connect(stops.append)
    for command in plan["setup"]:
        replay.run(command)
        while command == "continue" and stops and getattr(stops[-1], "stop_signal", None) in DELIVERED_SIGNALS:
            stops.clear()
            replay.signal_pcs.add(int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF)
            gdb.execute("stepi", to_string=True)
            gdb.execute("continue", to_string=True)
    gdb.events.stop.disconnect(stops.append)
    for signal in DELIVERED_SIGNALS:  # replaying, a recorded signal is no stop (and `pass` would make GDB spin)
        gdb.execute(f"handle {signal} nostop noprint nopass", to_string=True)
    replay.stop_pc = int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF
    info = replay.record_info()
    if info["highest"] != info["logged"]:
        raise RuntimeError(f"record log numbering: highest {info['highest']} but {info['logged']} logged")
    replay.logged = info["logged"]
    gdb.execute("record goto begin", to_string=True)
    replay.offset = replay.record_info()["current"]


def sweep(replay, truth):
    """Step through the whole log once: check each pc against the ground truth, map numbers to indices."""
    rows, repeats, signals = [], 0, 0
    inferior = gdb.selected_inferior()
    number = 0
    while number < replay.logged:
        pc = int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF
        expected = truth[len(rows)] if len(rows) < len(truth) else None
        index = len(rows) - 1
        if rows and pc == truth[len(rows) - 1] and inferior.read_memory(pc, 1)[0][0] in REP_PREFIXES:
            repeats += 1  # another iteration of the same rep instruction
        elif rows and pc in replay.signal_pcs and pc != expected:
            signals += 1  # the signal's stop and delivery: the trace goes straight on into the handler
        elif expected is None and pc == replay.stop_pc:
            index = len(rows)  # the instruction that faulted: logged, never completed; the trace stops at it
            replay.faulted = True
        else:
            if expected is None or pc != expected:
                raise RuntimeError(f"GDB's instruction {number} is at {pc:#x}, the trace's item {len(rows)} is not")
            replay.number_of.append(number)
            rows.append(model_row())
            index += 1
        replay.index_of.append(index)
        gdb.execute("stepi", to_string=True)
        if pc in replay.signal_pcs:  # a stepi goes past the delivery entry
            for _ in range(replay.gdb_number() - number - 1):
                signals += 1
                replay.index_of.append(len(rows) - 1)
            number = replay.gdb_number()
        else:
            number += 1
    if len(rows) != len(truth):
        raise RuntimeError(f"GDB ran {len(rows)} instructions (+{repeats} rep iterations), the trace {len(truth)}")
    replay.index_of.append(len(rows))
    replay.number_of.append(replay.logged)
    replay.model = Model(rows, model_row())
    return repeats, signals


def main():
    with open(os.environ["HISTORY_PLAN"]) as file:
        plan = json.load(file)
    for setting in plan["settings"]:
        gdb.execute(setting, to_string=True)
    replay = Replay(plan)
    record_to_stop(replay, plan)
    repeats, signals = sweep(replay, plan["ground_truth"])
    answers = {
        "gdb_version": gdb.VERSION,
        "gdb_log_length": replay.logged,
        "rep_iterations": repeats,
        "signal_entries": signals,
        "instruction_count": replay.count,
        "number_of_first_instruction": replay.offset,
        "end": replay.state(),
        "sequences": [replay.sequence(spec) for spec in plan["sequences"]],
    }
    with open(os.environ["HISTORY_ANSWERS"], "w") as file:
        json.dump(answers, file)


try:
    main()
except Exception as exc:  # the host must see why, then GDB must exit non-zero
    gdb.write(f"\n@@history-failed {type(exc).__name__}: {exc}@@\n")
    gdb.flush()
    gdb.execute("kill", to_string=True)
    os._exit(3)
