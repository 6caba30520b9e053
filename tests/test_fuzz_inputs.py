"""A small fixed budget of the other fuzz campaigns: mutated bundles, trace files, ELF programs, random walks.

Each input runs in a forked child limited in time and memory (support/fuzz_runner.py) and must end as an
answer or a one-line LldbTraceError: support/input_mutations.py damages the committed bundles' JSON, trace
files and programs, support/history_sequences.py walks their history and checks where every command leaves
the thread.  The budgets are seeded, so the same inputs run every time; ``tests/fuzz_campaign.py KIND
--count N`` runs a long campaign by hand.
"""

import pytest
from support.campaigns import campaign
from support.fuzz_runner import ANSWER, Limits

BUDGETS = {"bundle": 30, "trace": 20, "module": 20, "history": 40}
SEED = 2026


@pytest.mark.parametrize("kind", sorted(BUDGETS))
def test_every_input_is_an_answer_or_a_one_line_error(kind):
    tally = campaign(kind, BUDGETS[kind], seed=SEED, limits=Limits(seconds=60))
    assert not tally.failures, "\n".join(tally.report())
    assert tally.total == BUDGETS[kind] and tally.counts[ANSWER]
