"""The fuzz campaigns by kind of input (perf, bundle, trace, module, history): the inputs each draws, and its target.

tests/fuzz_campaign.py runs them by hand (its docstring says what each kind
mutates); tests/test_fuzz_perf_data.py and tests/test_fuzz_inputs.py run a
small budget of each in CI.
"""

import tempfile
from pathlib import Path

from lldb_trace.errors import LldbTraceError

from . import history_sequences, input_mutations, perf_mutations
from .fuzz_runner import Limits, run_campaign
from .trace_exercise import exercise, warmed


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


def perf_campaign(scratch, count, seed, first):
    """The perf.data mutants and what to do with each."""
    return perf_inputs(scratch, count, seed, first), exercise


def bundle_campaign(kind):
    """The campaign of ``kind`` (bundle, trace or module): the seeds' mutants, and what to do with each."""

    def inputs_and_target(scratch, count, seed, first):
        seeds = input_mutations.prepare_seeds(Path(scratch) / "seeds")
        kept = warmed(str(bundle) for bundle in seeds.values())
        if kind == "bundle":
            target = exercise
        else:

            def target(path):
                return exercise(str(input_mutations.bundle_naming(path, seeds, kind)))

        return _keeping(input_mutations.mutants(kind, seeds, count, seed, first), kept), target

    return inputs_and_target


def history_campaign(scratch, count, seed, first):
    seeds = input_mutations.prepare_seeds(Path(scratch) / "seeds")
    traces = dict(zip(seeds, warmed(str(bundle) for bundle in seeds.values()), strict=True))
    return history_sequences.sequences(traces, count, seed, first), lambda path: history_sequences.run(traces, path)


def _keeping(inputs, kept):
    """``inputs``, holding on to ``kept`` (warmed traces) until the last one is drawn."""
    yield from inputs
    del kept


KINDS = {
    "perf": (perf_campaign, ".perf.data", "mutated perf.data files of the committed cases"),
    "bundle": (bundle_campaign("bundle"), ".json", "mutated JSON of the committed bundles"),
    "trace": (bundle_campaign("trace"), ".ipt", "mutated trace files of the committed bundles"),
    "module": (bundle_campaign("module"), ".elf", "mutated ELF programs of the committed bundles"),
    "history": (history_campaign, ".json", "random walks through the committed bundles' history"),
}


def campaign(kind, count, seed=0, first=0, limits=None, keep=None, progress=None):
    """Run ``count`` inputs of ``kind`` from number ``first`` (fuzz_runner.Limits ``limits``); the Tally."""
    make, suffix, _ = KINDS[kind]
    limits = limits or Limits()
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or scratch
        Path(folder).mkdir(parents=True, exist_ok=True)
        inputs, target = make(scratch, count, seed, first)
        return run_campaign(inputs, target, (LldbTraceError,), folder, limits, suffix, progress)
