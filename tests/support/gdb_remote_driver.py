"""Runs INSIDE GDB (gdb -batch -x gdb_remote_driver.py): GDB's own commands over `lldb-trace serve`.

The plan (JSON, path in $REMOTE_PLAN) holds the server command and a program's committed sequences
(test_traces/history/NAME/gdb.json).  Each sequence starts at its recorded position; each step runs
GDB's command as a user types it (`record goto N` becomes `monitor goto` next to N and one
instruction step onto it), from where the step before left the thread.  Between marker lines on
stdout the driver writes what GDB printed (its stop messages go to the terminal, not to
`to_string`), the error GDB raised, and the position the server stands at afterwards (`monitor
info`).
"""

import json
import os
import re

import gdb

POSITION = re.compile(r"\* thread \d+ at position (\d+):")


def run(command):
    try:
        gdb.execute(command)
    except gdb.error as error:
        return str(error)
    return None


def position():
    text = gdb.execute("monitor info", to_string=True)
    found = POSITION.search(text)
    if found is None:
        raise RuntimeError(f"monitor info said {text!r}")
    return int(found.group(1))


def goto(target, end):
    """Stand at ``target`` as GDB's own stop: `monitor goto` next to it, then one instruction step onto it (a
    `monitor goto` alone leaves GDB 14 and later deciding its next step from the pc of its last stop)."""
    if target < end:
        gdb.execute(f"monitor goto {target + 1}", to_string=True)
        gdb.execute("maint flush register-cache", to_string=True)
        gdb.execute("reverse-stepi", to_string=True)
    else:
        gdb.execute(f"monitor goto {target - 1}", to_string=True)
        gdb.execute("maint flush register-cache", to_string=True)
        gdb.execute("stepi", to_string=True)


def say(marker):
    gdb.flush()
    gdb.write(f"\n@@{marker}@@\n")
    gdb.flush()


def main():
    with open(os.environ["REMOTE_PLAN"]) as file:
        plan = json.load(file)
    for command in plan["setup"]:
        gdb.execute(command)
    for number, sequence in enumerate(plan["sequences"]):
        run("delete")
        goto(sequence["start"]["position"], plan["end"])
        for step in sequence["steps"]:
            command = step["command"]
            if "skipped" in step:
                continue  # GDB ran the live process there: the recording has no answer
            if command.startswith("record goto"):  # GDB's numbering: the server's is the trace's
                goto(step["position"], plan["end"])
                continue
            if not command.startswith(("break ", "delete")) and position() != step["from"]:
                goto(step["from"], plan["end"])
            say(f"step {number} {step['step']} begin")
            error = run(command)
            say(f"step {number} {step['step']} end")
            answer = {"sequence": number, "step": step["step"], "position": position(), "error": error}
            gdb.write("@@answer " + json.dumps(answer) + "@@\n")
            gdb.flush()


main()
