"""Runs INSIDE GDB for benchmarks/remote.py: times each command over `lldb-trace serve` and marks it in the log.

The plan (JSON, path in $REMOTE_BENCH_PLAN) lists the commands; after each one the driver sends
`monitor info` (its qRcmd packet divides the server's log between commands, and it says the
position).  The answers go to $REMOTE_BENCH_ANSWERS.
"""

import json
import os
import re
import time

import gdb

POSITION = re.compile(r"\* thread \d+ at position (\d+):")


def timed(command):
    started = time.perf_counter()
    error = None
    try:
        gdb.execute(command, to_string=True)
    except gdb.error as exc:
        error = str(exc)
    seconds = time.perf_counter() - started
    position = int(POSITION.search(gdb.execute("monitor info", to_string=True)).group(1))
    return {"command": command, "seconds": seconds, "position": position, "error": error}


def main():
    with open(os.environ["REMOTE_BENCH_PLAN"]) as file:
        plan = json.load(file)
    for command in plan["settings"]:
        gdb.execute(command)
    answers = [timed(plan["connect"])]
    answers += [timed(command) for command in plan["commands"]]
    with open(os.environ["REMOTE_BENCH_ANSWERS"], "w") as file:
        json.dump(answers, file)


main()
