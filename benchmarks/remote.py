"""GDB over `lldb-trace serve` on the 29M-instruction trace: each command's time and packet count.

    .venv/bin/python benchmarks/remote.py [--bundle DIR] [--gdb GDB]

The bundle is benchmarks/history.py's (hot_calls.c, 29.0 million instructions, 1.0 million calls,
recorded on first use).  Debian's GDB connects with `target remote | lldb-trace serve --stdio`, then:
`bt` at the end; at positions spread over the trace and at three near its end (the values, and so
GDB's unwinding, cover the last 250,000 positions), `monitor goto N`, `bt`, `reverse-next`, `bt`,
`reverse-finish`, `bt`, `next`, `bt`; a breakpoint at main's first line and `reverse-continue` from
the end (the other end of history: the whole trace scanned), `bt`, then a breakpoint at finished()
and `continue` back to the end.  Times are GDB's own (Python's clock around `gdb.execute`), packets
are the server's log (`--log`) between the commands.  Nothing asserts them.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from history import DEFAULT_BUNDLE, FRACTIONS, build_bundle, source_line

import lldb_trace.api as pt

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).with_name("remote_gdb_driver.py")
SERVE = f"{ROOT / '.venv' / 'bin' / 'lldb-trace'} serve --stdio"
MARKER = "<- b'qRcmd," + b"info".hex() + "'"  # the driver's `monitor info` after each command
KIND = re.compile(r"vCont;[a-z]|q[A-Za-z]+|[a-zA-Z]s?")  # a packet's kind: vCont;r, qXfer, bs, g, m...
MOVES = ("bt", "reverse-next", "bt", "reverse-finish", "bt", "next", "bt")
NEAR_THE_END = (200_000, 50_000, 1_000)  # positions with values: the recovery covers the last 250,000


def plan_for(bundle, log, count):
    commands = ["bt"]
    positions = [int(count * fraction) for fraction in FRACTIONS] + [count - back for back in NEAR_THE_END]
    for position in positions:
        commands += [f"monitor goto {position}", "maint flush register-cache", *MOVES]
    commands += ["monitor goto end", "maint flush register-cache", f"break hot_calls.c:{source_line('int main')}"]
    commands += ["reverse-continue", "bt", "delete", "break finished", "continue", "bt"]
    return {
        "settings": ["set pagination off", "set confirm off", "set width 0", "set remotetimeout 600"],
        "connect": f"target remote | {SERVE} --log {log} {bundle}",
        "commands": commands,
    }


def packets_between(log_text):
    """The packets the server answered for each command, by kind (``bs``, ``g``, ``vCont;r``...): the log cut at
    the driver's `monitor info`."""
    commands, current = [], collections.Counter()
    for line in log_text.splitlines():
        if MARKER in line:
            commands.append(current)
            current = collections.Counter()
        elif "<- b'" in line:
            packet = line.split("<- b'", 1)[1]
            current[KIND.match(packet).group(0) if KIND.match(packet) else packet[:1]] += 1
    return commands


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(DEFAULT_BUNDLE))
    parser.add_argument("--gdb", default="gdb")
    options = parser.parse_args()
    bundle = build_bundle(options.bundle)
    count = pt.open_bundle(bundle).threads[0].item_count
    with tempfile.TemporaryDirectory() as scratch:
        plan_path, answers_path, log = (Path(scratch) / name for name in ("plan.json", "answers.json", "serve.log"))
        plan_path.write_text(json.dumps(plan_for(bundle, log, count)))
        environment = {**os.environ, "REMOTE_BENCH_PLAN": str(plan_path), "REMOTE_BENCH_ANSWERS": str(answers_path)}
        program = next((bundle / "modules").rglob("hot_calls"), None) if (bundle / "modules").is_dir() else None
        command = [options.gdb, "-batch", "-nx", "-x", str(DRIVER), *([str(program)] if program else [])]
        run = subprocess.run(command, env=environment, capture_output=True, text=True)
        if not answers_path.is_file():
            raise SystemExit(f"GDB did not finish:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        answers = json.loads(answers_path.read_text())
        counts = packets_between(log.read_text())
    version = subprocess.run([options.gdb, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"$ .venv/bin/python benchmarks/remote.py  ({version}; {count:,} positions)")
    print("| command | position after | seconds | packets | by kind |")
    print("| --- | ---: | ---: | ---: | --- |")
    for answer, packets in zip(answers, counts, strict=False):
        error = f" ({answer['error']})" if answer["error"] else ""
        kinds = ", ".join(f"{kind} {count}" for kind, count in packets.most_common())
        command, seconds = answer["command"][:60], answer["seconds"]
        print(f"| `{command}`{error} | {answer['position']:,} | {seconds:.3f} | {packets.total()} | {kinds} |")


if __name__ == "__main__":
    main()
