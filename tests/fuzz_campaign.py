"""Fuzz campaigns, run by hand: hostile inputs through the whole Python API, each in a forked child with limits.

    .venv/bin/python tests/fuzz_campaign.py perf --count 5000 --seed 1

Each kind of input is a subcommand: ``perf`` mutates the committed cases'
perf.data files (support/perf_mutations.py).  Every mutant is opened and used
as support/trace_exercise.py says, in a child limited in time and address
space (support/fuzz_runner.py), and ends as an answer, a one-line
LldbTraceError, or a failure.  Failing mutants are kept in ``--keep`` (with
their number: ``--first N --count 1`` makes the same one again); the exit
status is 1 when any failed.  tests/test_fuzz_perf_data.py runs a small
budget of the same campaign in CI.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from support import perf_mutations
from support.fuzz_runner import Limits, run_campaign
from support.trace_exercise import exercise, warmed

from lldb_trace.errors import LldbTraceError


class NoSeedsError(Exception):
    """No seed can be made on this machine."""


def perf_inputs(folder, count, seed, first=0):
    """``(label, bytes, description)`` of perf.data mutants, after warming the parent on every seed."""
    seeds = perf_mutations.seed_files(folder)
    if not seeds:
        raise NoSeedsError("no perf.data seed: this machine's libraries are not the ones the committed traces ran")
    kept = warmed(str(Path(folder) / f"{name}.perf.data") for name in sorted(seeds))  # read once, for every child
    for number, name, data, description in perf_mutations.mutants(seeds, count, seed, first):
        yield f"perf-{seed}-{number}", data, f"{name}: {description}"
    del kept


KINDS = {"perf": (perf_inputs, ".perf.data", "mutated perf.data files of the committed cases")}


def campaign(kind, count, seed=0, first=0, limits=None, keep=None, progress=None):
    """Run ``count`` inputs of ``kind`` from number ``first`` (fuzz_runner.Limits ``limits``); the Tally."""
    make_inputs, suffix, _ = KINDS[kind]
    limits = limits or Limits()
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or scratch
        Path(folder).mkdir(parents=True, exist_ok=True)
        inputs = make_inputs(scratch, count, seed, first)
        return run_campaign(inputs, exercise, (LldbTraceError,), folder, limits, suffix, progress)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="kind", required=True)
    for kind, (_, _, what) in KINDS.items():
        command = commands.add_parser(kind, help=what)
        command.add_argument("--count", type=int, default=1000, help="how many inputs (default 1000)")
        command.add_argument("--seed", type=int, default=0, help="the campaign's random seed (default 0)")
        command.add_argument("--first", type=int, default=0, help="the number of the first input (default 0)")
        command.add_argument("--timeout", type=float, default=20.0, help="seconds per input (default 20)")
        command.add_argument("--memory-mb", type=int, default=2048, help="address space per input (default 2048)")
        command.add_argument("--keep", help="folder to keep failing inputs in (default: a temporary one)")
        command.add_argument("--verbose", action="store_true", help="print every outcome")
    args = parser.parse_args(argv)
    seen = [0]

    def progress(label, description, outcome):
        seen[0] += 1
        if args.verbose or outcome.failed:
            print(f"{label} {outcome.kind}: {description}: {outcome.detail.strip().splitlines()[-1][:300]}", flush=True)
        elif seen[0] % 250 == 0:
            print(f"... {seen[0]} of {args.count}", flush=True)

    limits = Limits(args.timeout, args.memory_mb << 20)
    try:
        tally = campaign(args.kind, args.count, args.seed, args.first, limits, args.keep, progress)
    except NoSeedsError as error:
        parser.exit(2, f"{error}\n")
    print("\n".join(tally.report()))
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
