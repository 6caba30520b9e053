"""Time travel on a large trace: how long each movement, ``bt`` and search takes after the first decode.

    .venv/bin/python benchmarks/history.py [--bundle DIR] [--no-lldb22] [--profile] [--json FILE]

The bundle (default benchmarks/out/history-29m, recorded on first use in about
a minute): test_traces/src/hot_calls.c built with -O0 -DN=1000, a hot loop
calling small functions, 29.0 million instructions and 1.0 million calls,
recorded from main to finished() by ``pt start --backend software``.

Each column is a fresh process; the LLDB ones drive an in-process LLDB through
SBCommandInterpreter.HandleCommand, one timer around each command:

- pip LLDB 23.1 (this venv's ``lldb`` module) with lldb_trace imported;
- the plain Python API without LLDB, which times the first decode and the
  call forest apart (``trace load`` does both);
- Debian's LLDB 22 (/usr/bin/python3's ``lldb``) with lldb_trace imported;
- Debian's LLDB 22 alone: it has no position and no reverse stepping, so only
  ``thread trace dump info`` (the first decode) and ``thread trace dump
  instructions --id N -c 1`` are timed.  Its ``thread trace dump
  function-calls`` is left out: on this trace it grew past 10 GB of RSS.

The sequence: ``trace load``, then at each of 9 positions spread over the trace
``pt goto N``, ``bt``, ``pt reverse-next``, ``bt``, ``pt next``, ``bt``,
``pt reverse-finish``, ``bt``; ``pt reverse-continue`` from the end to main's
first line and ``pt continue`` from the beginning to a breakpoint never hit
(both scan the whole trace), ``pt reverse-continue`` to a breakpoint hit half a
million times, ``pt find --function`` (when ``help pt find`` knows it) and the
API's ``thread.find``.  ``--profile`` runs the pip column under cProfile and
prints where the slow commands' time goes.  Budgets are issue 16's; nothing
asserts them.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import resource
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "test_traces" / "src" / "hot_calls.c"
DEFAULT_BUNDLE = ROOT / "benchmarks" / "out" / "history-29m"
SITE_PACKAGES = next(Path(ROOT, ".venv", "lib").glob("python3*/site-packages"))
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
VENV_LLDB = ROOT / ".venv" / "bin" / "lldb"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, whose ``lldb`` module is lldb-22's
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MOVES = ("bt", "pt reverse-next", "bt", "pt next", "bt", "pt reverse-finish", "bt")
BUDGET_MOVE, BUDGET_SCAN = 0.1, 1.0


# -- the bundle --------------------------------------------------------------------------------------


def build_bundle(outdir, n=1000, log=print):
    """Record hot_calls.c (-DN=n) from main to finished() into ``outdir``, unless a bundle is there."""
    outdir = Path(outdir).resolve()  # the recording runs in the staging folder
    if (outdir / "trace.json").is_file():
        return outdir
    staging = outdir.with_name(outdir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    program = staging / "hot_calls"
    subprocess.run(["gcc", "-O0", "-g", f"-DN={n}", "-o", str(program), str(SOURCE)], check=True)
    bundle = staging / "bundle"
    log(f"recording {program.name} -DN={n} (about {29 * n:,} thousand instructions, a minute or two) ...")
    started = time.perf_counter()
    commands = ["command script import lldb_trace", "b main", "run", "pt start --backend software",
                "b finished", "continue", f"trace save {bundle} --copy-images"]  # fmt: skip
    argv = [str(VENV_LLDB), "--batch", *[a for c in commands for a in ("-o", c)], "--", str(program)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=staging)
    if not (bundle / "trace.json").is_file():
        raise SystemExit(f"recording failed: no {bundle}/trace.json (run the lldb command by hand to see why)")
    log(f"recorded in {time.perf_counter() - started:.1f} s")
    shutil.rmtree(outdir, ignore_errors=True)
    os.replace(bundle, outdir)  # the bundle holds a copy of the program (--copy-images)
    shutil.rmtree(staging)
    return outdir


def source_line(text):
    """The line number of the first line of hot_calls.c holding ``text``."""
    lines = SOURCE.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


# -- one column: a child process with an in-process LLDB ---------------------------------------------


class Session:
    """An in-process LLDB whose commands are timed one by one (and profiled with ``profile``)."""

    def __init__(self, lldb=None, profile=False):
        self.lldb, self.profile = lldb, profile
        if lldb is not None:
            self.debugger = lldb.SBDebugger.Create(False)
            self.debugger.SetAsync(False)
            self.interpreter = self.debugger.GetCommandInterpreter()
        self.log = []

    def run(self, command, label=None, required=False):
        """Run ``command`` (timed, and profiled with ``profile``); ``required``: a failure ends the run."""
        result = self.lldb.SBCommandReturnObject()
        self._measure(label or command, command, lambda: self.interpreter.HandleCommand(command, result))
        logged = self.log[-1]
        logged["ok"] = result.Succeeded()
        output = (result.GetOutput() or "") + (result.GetError() or "")
        logged["output_lines"] = output.count("\n")
        logged["output"] = output if len(output) < 4000 else f"{output[:2000]}\n...\n{output[-2000:]}"
        if required and not logged["ok"]:
            raise SystemExit(f"'{command}' failed: {logged['output'].strip()}")
        return logged

    def timed(self, label, function):
        """Time a Python call (the API) like a command."""
        value = self._measure(label, label, function)
        self.log[-1].update(ok=True, output=repr(value)[:4000])
        return value

    def _measure(self, label, command, function):
        profiler = cProfile.Profile() if self.profile else None
        started = time.perf_counter()
        value = profiler.runcall(function) if profiler else function()
        logged = {"label": label, "command": command, "seconds": time.perf_counter() - started}
        print(f"{logged['seconds']:9.3f} s  {command}", file=sys.stderr, flush=True)  # progress, on stderr
        if profiler:
            logged["profile"] = _top_functions(profiler)
        self.log.append(logged)
        return value


def _top_functions(profiler, count=12):
    """The functions the time went to, by their own time and with their callees'."""
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("tottime").print_stats(count)
    stats.sort_stats("cumulative").print_stats(count)
    return re.sub(r"\n\s*Ordered by.*?\n", "\n", stream.getvalue())


LOAD = "`trace load` (ours: decode and call forest too)"
DECODE = "first decode (API: `thread.decoded`; native: `thread trace dump info`)"
FOREST = "call forest (API: `thread.call_forest()`)"
FIRST_GOTO = "first `pt goto N`"
GOTO = "`pt goto N` (native: `thread trace dump instructions --id N -c 1`)"
BACK_TO_MAIN = "`pt reverse-continue`, end to main's first line"
NEVER_HIT = "`pt continue`, beginning to end (breakpoint never hit)"
DENSE = "`pt reverse-continue`, breakpoint on `mix` (500,000 hits)"
FIND = "`pt find --function mix` (newest 20 listed)"
FIND_ONCE = "`pt find --function finished` (called once)"
FIND_ALL = "`pt find --function mix -c 0` (all 500,000 listed)"
API_FIRST = "API: the first `thread.find(function='finished')` (reads the modules' symbols)"
API_FIND_ALL = "API `thread.find(function='mix')`, all 500,000"
API_FIND = "API `thread.find(function='mix', limit=20)`"
ROWS = ((LOAD, None), (DECODE, None), (FOREST, None), (FIRST_GOTO, None), (GOTO, BUDGET_MOVE),
        *((f"`{command}`", BUDGET_MOVE) for command in dict.fromkeys(MOVES)),
        (BACK_TO_MAIN, BUDGET_SCAN), (NEVER_HIT, BUDGET_SCAN), (DENSE, None), (FIND, BUDGET_SCAN),
        (FIND_ONCE, BUDGET_SCAN), (FIND_ALL, None), (API_FIRST, None), (API_FIND_ALL, BUDGET_SCAN),
        (API_FIND, BUDGET_SCAN))  # fmt: skip


def run_ours(session, bundle, positions):
    """lldb_trace's side: trace load, the first decode and forest, movements at each position, scans, find."""
    session.run("command script import lldb_trace", required=True)
    _load(session, bundle)
    from lldb_trace import api  # importable now: LLDB imported it

    thread = api.of_target(session.debugger.GetSelectedTarget()).threads[0]
    count = thread.item_count
    positions = positions or [int(count * fraction) + 13 * k for k, fraction in enumerate(FRACTIONS)]
    rss = {"after trace load": _rss_mb()}
    session.run(f"pt goto {positions[-1]}", FIRST_GOTO)
    rss["after the first pt goto"] = _rss_mb()
    for position in positions:
        session.run(f"pt goto {position}", GOTO)
        for command in MOVES:
            session.run(command, f"`{command}`")
    setup = "setup"
    session.run(f"breakpoint set -f hot_calls.c -l {source_line('volatile unsigned acc')}", setup)
    session.run("pt goto end", setup)
    session.run("pt reverse-continue", BACK_TO_MAIN)
    session.run("bt")
    for command in ("breakpoint delete -f", "breakpoint set -n finished", "pt goto begin"):
        session.run(command, setup)
    session.run("pt continue", NEVER_HIT)
    for command in ("breakpoint delete -f", "breakpoint set -n mix", "pt goto end"):
        session.run(command, setup)
    session.run("pt reverse-continue", DENSE)
    session.run("bt")
    if session.run("help pt find", setup)["ok"]:
        session.run("pt find --function mix", FIND)
        session.run("pt find --function finished", FIND_ONCE)
        session.run("pt find --function mix -c 0", FIND_ALL)
    session.timed(API_FIND_ALL, lambda: len(thread.find(function="mix")))
    session.timed(API_FIND, lambda: len(thread.find(function="mix", limit=20)))
    rss["at the end"] = _rss_mb()
    return {"items": count, "positions": positions, "rss_mb": rss, "log": session.log}


def run_native(session, bundle, positions):
    """Native lldb-22's intel-pt plugin on the same bundle: what it can do of the same work."""
    _load(session, bundle)
    session.run("thread trace dump info", DECODE, required=True)
    rss = {"after the first decode": _rss_mb()}
    for position in positions:
        session.run(f"thread trace dump instructions --id {position} -c 1", GOTO)
    rss["at the end"] = _rss_mb()
    return {"positions": positions, "rss_mb": rss, "log": session.log}


def run_api(session, bundle):
    """The plain Python API, no LLDB: the first decode and the call forest apart, and find."""
    from lldb_trace import api

    thread = api.open_bundle(bundle / "trace.json").threads[0]
    session.timed(DECODE, lambda: thread.decoded.item_count)
    rss = {"after the first decode": _rss_mb()}
    session.timed(FOREST, lambda: len(thread.call_forest()))
    rss["after the call forest"] = _rss_mb()
    session.timed(API_FIRST, lambda: len(thread.find(function="finished")))
    session.timed(API_FIND_ALL, lambda: len(thread.find(function="mix")))
    session.timed(API_FIND, lambda: len(thread.find(function="mix", limit=20)))
    rss["at the end"] = _rss_mb()
    return {"rss_mb": rss, "log": session.log}


def _load(session, bundle):
    """``trace load``, checked by its result: routed to ``pt load`` in lldb-22, it reports no status of its own."""
    logged = session.run(f'trace load "{bundle / "trace.json"}"', LOAD)
    logged["ok"] = session.debugger.GetSelectedTarget().GetProcess().IsValid()
    if not logged["ok"]:
        raise SystemExit(f"trace load {bundle} failed: {logged['output'].strip()}")


def _rss_mb():
    """Peak RSS of this process and, separately, of the decoder's forked children."""
    return {
        "self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def child_main(kind, bundle, out, positions, profile):
    if kind == "api":  # plain Python: no LLDB in this process
        result = {**run_api(Session(), bundle), "lldb": "API, no LLDB"}
    else:
        import lldb

        if kind == "native":
            os.environ["LLDB_TRACE_NO_ROUTING"] = "1"  # never routed, should anything import the plugin
            result = run_native(Session(lldb), bundle, positions)
        else:
            if not lldb.__file__.startswith(str(SITE_PACKAGES)):
                site.addsitedir(str(SITE_PACKAGES))  # lldb-22's Python: the plugin and its libraries from the venv
            result = run_ours(Session(lldb, profile), bundle, positions)
        result["lldb"] = lldb.SBDebugger.GetVersionString().splitlines()[0].replace("lldb version ", "LLDB ")
    result["python"] = f"{sys.executable} {sys.version.split()[0]}"
    Path(out).write_text(json.dumps(result))
    os._exit(0)  # skip LLDB's teardown, which can take seconds with a large trace loaded


def run_child(python, kind, bundle, positions=(), profile=False):
    """One column in a fresh process: its result, plus the whole process's peak RSS from os.wait4."""
    with tempfile.TemporaryDirectory() as workdir:
        out = Path(workdir) / "result.json"
        argv = [python, __file__, "--child", kind, "--bundle", str(bundle), "--out", str(out)]
        argv += ["--positions", ",".join(map(str, positions))] if positions else []
        argv += ["--profile"] if profile else []
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) or not out.exists():
            raise SystemExit(f"the {kind} run under {python} failed (status {status}): rerun it with --child")
        return {**json.loads(out.read_text()), "process_max_rss_mb": usage.ru_maxrss / 1024}


# -- the report --------------------------------------------------------------------------------------


def _cell(result, label, budget=None):
    """Median / slowest of the successful runs of ``label``; how many were refused (an error, as GDB's)."""
    runs = [run for run in result["log"] if run["label"] == label]
    seconds = [run["seconds"] for run in runs if run["ok"]]
    refused = f" ({len(runs) - len(seconds)} refused)" if len(seconds) < len(runs) else ""
    if not seconds:
        return refused.strip()
    worst = max(seconds)
    flag = " **over**" if budget and worst > budget else ""
    if len(seconds) == 1:
        return f"{_ms(worst)}{flag}{refused}"
    return f"{_ms(statistics.median(seconds))} / {_ms(worst)}{flag}{refused}"


def _ms(seconds):
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def report(columns):
    """The markdown tables: one row per operation, one column per process."""
    names = list(columns)
    header = ["operation", "budget", *names]
    lines = ["| " + " | ".join(header) + " |", "| --- | ---: |" + " ---: |" * len(names)]
    for row, budget in ROWS:
        cells = [_cell(columns[name], row, budget) for name in names]
        if any(cells):
            cells = [cell or "—" for cell in cells]
            lines.append(f"| {row} | {_ms(budget) if budget else ''} | " + " | ".join(cells) + " |")
    rss = []
    for name in names:
        result = columns[name]
        children = max(point["children"] for point in result["rss_mb"].values())
        rss.append(f"{result['process_max_rss_mb']:,.0f} MB" + (f" (decoders {children:,.0f} MB)" if children else ""))
    lines += ["| peak RSS of the process |  | " + " | ".join(rss) + " |", ""]
    lines.append("Cells: median / slowest of the 9 positions where there are several; **over**: the slowest misses "
                 "the budget; refused: an error, as GDB's (reverse-finish in the outermost frame); —: nothing to "
                 "time (native LLDB has no position in history, no reverse stepping and no search).")  # fmt: skip
    return "\n".join(lines)


def stops(result):
    """Where each movement of one column went, and what each search found: what the numbers are numbers of."""
    lines = ["| command | ms | where it stopped, or what it found |", "| --- | ---: | --- |"]
    for logged in result["log"]:
        if logged["label"] == "setup" or logged["command"] == "bt":
            continue
        output = logged["output"].strip()
        frame = re.search(r"frame #0: 0x[0-9a-f]+ ([^\s(]+)", output)
        position = re.search(r"Position: ([^\n]*)\.", output)
        listed = re.findall(r"^ *(\d+) +(\d+) +(\S+)$", output, re.M)
        if not logged["ok"]:
            where = output.splitlines()[-1] if output else "error"
        elif position:
            where = f"{frame.group(1) if frame else ''} {position.group(1)}"
        elif listed:
            newest = f"the newest at item {listed[0][0]} (depth {listed[0][1]}, {listed[0][2]})"
            where = f"{logged['output_lines']:,} lines, {newest}"
        else:
            where = output.splitlines()[0][:100] if output else ""
        command = logged["command"] if "`" in logged["command"] else f"`{logged['command']}`"
        lines.append(f"| {command} | {logged['seconds'] * 1000:,.0f} | {where} |")
    return "\n".join(lines)


def profiles(result):
    """cProfile's top functions for the first decode, the listing of every call and each command over its budget."""
    budgets = {**{label: budget for label, budget in ROWS if budget}, LOAD: 0, FIND_ALL: 0}
    parts = []
    for logged in result["log"]:
        budget = budgets.get(logged["label"])
        if budget is not None and logged["seconds"] > budget and logged.get("profile"):
            command = logged["command"] if "`" in logged["command"] else f"`{logged['command']}`"
            parts.append(f"### {command}: {logged['seconds']:.3f} s\n\n```\n{logged['profile'].strip()}\n```")
    return "\n\n".join(parts) or "(no command over its budget)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE, help=f"bundle folder (default {DEFAULT_BUNDLE})")
    parser.add_argument("--no-lldb22", action="store_true", help="only the pip LLDB and API columns")
    parser.add_argument("--profile", action="store_true", help="profile the pip column; print the slow commands")
    parser.add_argument("--json", type=Path, help="also write every number and output to this file")
    parser.add_argument("--child", choices=("ours", "native", "api"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--positions", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    positions = [int(p) for p in args.positions.split(",")] if args.positions else []
    if args.child:
        return child_main(args.child, args.bundle.resolve(), args.out, positions, args.profile)
    bundle = args.bundle.resolve()
    if args.bundle == DEFAULT_BUNDLE:
        build_bundle(bundle)
    elif not (bundle / "trace.json").is_file():
        parser.error(f"{bundle}/trace.json does not exist")
    pip = run_child(str(VENV_PYTHON), "ours", bundle, profile=args.profile)
    columns = {
        f"lldb_trace in pip {pip['lldb']}": pip,
        "lldb_trace API, no LLDB": run_child(str(VENV_PYTHON), "api", bundle),
    }
    if not args.no_lldb22:
        ours22 = run_child(SYSTEM_PYTHON, "ours", bundle, pip["positions"])
        columns[f"lldb_trace in {ours22['lldb']}"] = ours22
        columns[f"native {ours22['lldb']}"] = run_child(SYSTEM_PYTHON, "native", bundle, pip["positions"])
    print(f"bundle: {bundle}: {pip['items']:,} items; positions {', '.join(f'{p:,}' for p in pip['positions'])}")
    for name, result in columns.items():
        print(f"- {name}: {result['python']}")
    print()
    print(report(columns))
    print(f"\nWhere each command of the pip column stopped:\n\n{stops(pip)}")
    if args.profile:
        print(f"\n## Profiles (cProfile, pip column)\n\n{profiles(pip)}")
    if args.json:
        args.json.write_text(json.dumps(columns, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
