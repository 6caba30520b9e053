"""Runs INSIDE GDB (gdb -batch -x gdb_remote_driver.py): GDB's own commands over `lldb-trace serve`.

The plan (JSON, path in $REMOTE_PLAN) holds the bundle, the server command and a program's committed
sequences (test_traces/history/NAME/gdb.json).  Each sequence starts at its recorded position
(`monitor goto N`); each step runs GDB's command as a user types it (`record goto N` becomes
`monitor goto N`), from where the step before left the thread.  Between marker lines on stdout the
driver writes what GDB printed (its stop messages go to the terminal, not to `to_string`), the
error GDB raised, and the position the server stands at afterwards (`monitor info`).
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


def goto(target):
    gdb.execute(f"monitor goto {target}", to_string=True)
    gdb.execute("maint flush register-cache", to_string=True)


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
        goto(sequence["start"]["position"])
        for step in sequence["steps"]:
            command = step["command"]
            if "skipped" in step:
                continue  # GDB ran the live process there: the recording has no answer
            if command.startswith("record goto"):  # GDB's numbering: the server's is the trace's
                goto(step["position"])
                continue
            if not command.startswith(("break ", "delete")) and position() != step["from"]:
                goto(step["from"])
            say(f"step {number} {step['step']} begin")
            error = run(command)
            say(f"step {number} {step['step']} end")
            answer = {"sequence": number, "step": step["step"], "position": position(), "error": error}
            gdb.write("@@answer " + json.dumps(answer) + "@@\n")
            gdb.flush()


main()
