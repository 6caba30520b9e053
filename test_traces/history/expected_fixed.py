"""Where a newer GDB answers differently from GDB 13.1, and what goes with the answers we follow instead.

gdb_driver.py records ``expected_fixed`` (history_model.py's answer, with the reason) where GDB 13 is
known to be wrong; compare_newer attaches a newer GDB's answer wherever it differs from GDB 13's.
"""

import re

NO_MORE_HISTORY = "No more reverse-execution history."
SWAPCONTEXT = (
    "swapcontext switches rsp to the other stack a few instructions before its ret; from there on GDB "
    "unwinds its frame with the new stack: "
)
KNOWN_DISAGREEMENTS = {
    # (program, command, from): why lldb_trace answers otherwise (GDB 18 answers as GDB 13 here)
    ("contexts", "reverse-step", 153): SWAPCONTEXT + "at its last instruction GDB shows it called from the "
    "task's stack (swapcontext < work); the trace shows it called from main, where it was called",
    ("contexts", "reverse-step", 150): SWAPCONTEXT + "the frame id changes inside it, so GDB's reverse-step "
    "stops inside swapcontext (at 142, then 134); lldb_trace goes back through it to the start of main's "
    "calling line, as for any function without line information",
    ("contexts", "reverse-step", 142): SWAPCONTEXT + "the frame id changes inside it, so GDB's reverse-step "
    "stops inside swapcontext; lldb_trace goes back through it to the start of main's calling line",
}

LOCATION_LINE = re.compile(
    r"^(\d+\t.*"  # a source line
    r"|0x[0-9a-f]+\t\d+\t.*"  # an address and a source line
    r"|#\d+ .*"  # a frame line
    r"|(0x[0-9a-f]+ in )?\S+ \(.*\)( at \S+:\d+)?"  # the stop's frame
    r"|)$"
)


def messages(output):
    """GDB's lines besides the stop location and source text (e.g. 'No more reverse-execution history.')."""
    return [line for line in output.splitlines() if not LOCATION_LINE.match(line)]


def compare_newer(answers, newer, newer_run):
    """Attach the newer GDB's answer to every step where it stops elsewhere or shows another stack."""
    answers["newer_gdb"] = {"version": newer_run["version"], "command": newer_run["command"]}
    for sequence, newer_sequence in zip(answers["sequences"], newer["sequences"], strict=True):
        for step, other in zip(sequence["steps"], newer_sequence["steps"], strict=True):
            if "skipped" in step:
                continue
            step["messages"] = messages(step["output"])
            if other is None:
                continue
            if other["from"] != step["from"]:
                raise SystemExit(f"step {step['step']}: the newer GDB was asked from {other['from']}")
            if other["position"] != step["position"] or frames_of(other) != frames_of(step):
                step["newer_gdb"] = {
                    **{key: other[key] for key in ("position", "pc", "function", "file", "line", "frames")},
                    "messages": messages(other["output"]),
                    **({"error": other["error"]} if "error" in other else {}),
                }


def frames_of(state):
    return [(frame["pc"], frame["function"], frame["type"]) for frame in state["frames"]]


AFTER_REVERSE_FINISH = (
    "GDB >= 14 (bug 29927): after reverse-finish stops at the call, the calling line counts as stepped back "
    "over, so one reverse-step/reverse-next reaches the line before it; GDB 13 first went to the start of the "
    "calling line"
)


def follow_newer_after_reverse_finish(reference):
    """Expect the newer GDB's answer for a reverse-step or reverse-next right after a reverse-finish."""
    for sequence in reference["sequences"]:
        previous = None
        for step in sequence["steps"]:
            if "skipped" in step:
                previous = None
                continue
            follows = (
                previous is not None
                and previous["command"] == "reverse-finish"
                and previous.get("expected_fixed", previous)["position"] == step["from"]
            )
            if follows and step["command"] in ("reverse-step", "reverse-next") and "newer_gdb" in step:
                newer = step["newer_gdb"]
                fixed = {key: newer[key] for key in ("position", "pc", "function", "file", "line", "frames")}
                step["expected_fixed"] = {**fixed, "why": AFTER_REVERSE_FINISH}
            previous = step


def mark_fixed_behaviour(reference):
    """Give each expected_fixed the messages that go with its position, and mark the known disagreements.

    GDB says "No more reverse-execution history." when a command reaches the end of history it moves
    towards; where GDB 13 ran to that end and the expected position lies before it, the message goes.
    A known disagreement (KNOWN_DISAGREEMENTS) is a step where lldb_trace deliberately answers otherwise
    and no model says what is right: the test checks that it still disagrees."""
    follow_newer_after_reverse_finish(reference)
    end = reference["instruction_count"]
    for sequence in reference["sequences"]:
        for step in sequence["steps"]:
            if "skipped" in step:
                continue
            why = KNOWN_DISAGREEMENTS.get((reference["program"], step["command"], step["from"]))
            if why is not None:
                step["known_disagreement"] = why
            fixed = step.get("expected_fixed")
            if fixed is None:
                continue
            kept = [message for message in step.get("messages", []) if message != NO_MORE_HISTORY]
            towards = 0 if step["command"].startswith("reverse-") else end
            if fixed["position"] == towards != step["from"]:
                kept.append(NO_MORE_HISTORY)
            fixed["messages"] = kept
    return reference
