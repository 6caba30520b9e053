"""Fuzz campaigns, run by hand: hostile inputs through the whole Python API, each in a forked child with limits.

    .venv/bin/python tests/fuzz_campaign.py perf --count 5000 --seed 1
    .venv/bin/python tests/fuzz_campaign.py all --count 2500 --seed 1     # each kind in turn

Each kind of input is a subcommand: ``perf`` mutates the committed cases'
perf.data files (support/perf_mutations.py); ``bundle``, ``trace`` and
``module`` the committed bundles' JSON, trace files and ELF programs
(support/input_mutations.py); ``history`` plays random walks of movements,
gotos, searches and stacks on them (support/history_sequences.py).  Every
input is opened and used as support/trace_exercise.py says (a history walk
is checked after every command), in a child limited in time and address
space (support/fuzz_runner.py), and ends as an answer, a one-line
LldbTraceError, or a failure.  Failing inputs are kept in ``--keep`` (with
their number: ``--first N --count 1`` makes the same one again); the exit
status is 1 when any failed.  tests/test_fuzz_perf_data.py and
tests/test_fuzz_inputs.py run a small budget of each in CI.
"""

import argparse
import sys

from support.campaigns import KINDS, NoSeedsError, campaign
from support.fuzz_runner import Limits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="kind", required=True)
    for kind, what in [*((kind, what) for kind, (_, _, what) in KINDS.items()), ("all", "every kind in turn")]:
        command = commands.add_parser(kind, help=what)
        command.add_argument("--count", type=int, default=1000, help="how many inputs (of each kind; default 1000)")
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
            print(f"... {seen[0]}", flush=True)

    limits = Limits(args.timeout, args.memory_mb << 20)
    failed = False
    for kind in KINDS if args.kind == "all" else [args.kind]:
        try:
            tally = campaign(kind, args.count, args.seed, args.first, limits, args.keep, progress)
        except NoSeedsError as error:
            print(f"{kind}: skipped: {error}")
            continue
        print("\n".join([f"{kind}:", *tally.report()]), flush=True)
        failed = failed or bool(tally.failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
