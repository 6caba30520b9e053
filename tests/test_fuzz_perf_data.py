"""A small fixed budget of the perf.data fuzz campaign: every mutant is an answer or a one-line error.

The committed cases written as perf.data are mutated (support/perf_mutations.py:
records, fields, feature sections, AUXTRACE_INFO words, truncation, bit flips,
records duplicated by the thousand or deleted) and each mutant is opened and
used through the whole Python API in a forked child limited in time and memory
(support/fuzz_runner.py, support/trace_exercise.py).  The budget is seeded, so
the same mutants run every time; ``tests/fuzz_campaign.py perf --count N``
runs a long campaign by hand.
"""

import pytest
from support.campaigns import NoSeedsError, campaign
from support.fuzz_runner import ANSWER, ERROR, Limits

MUTANTS = 60
SEED = 2026


def test_mutated_perf_data_files_are_answers_or_one_line_errors():
    try:
        tally = campaign("perf", MUTANTS, seed=SEED, limits=Limits(seconds=60))
    except NoSeedsError as error:
        pytest.skip(str(error))
    assert not tally.failures, "\n".join(tally.report())
    assert tally.total == MUTANTS and tally.counts[ANSWER] and tally.counts[ERROR]
