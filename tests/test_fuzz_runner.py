"""The fuzz campaigns' runner: each way a run can end is told apart, and no run can take the parent with it."""

import os
import signal

from support.fuzz_runner import ANSWER, ERROR, FAILURE, Limits, Outcome, run_campaign, run_limited

from lldb_trace.errors import LldbTraceError

QUICK = Limits(seconds=10, memory=1 << 30)


def answer(value):
    return value * 2


def one_line(_):
    raise LldbTraceError("the input is bad: fix it")


def two_lines(_):
    raise LldbTraceError("the input is bad\nfix it")


def bug(_):
    return {}["missing"]


def greedy(_):
    return bytearray(2 << 30)  # past the 1 GiB of address space the child may add


def crash(_):
    os.kill(os.getpid(), signal.SIGSEGV)


def spin(_):
    while True:
        pass


def test_each_ending_is_classified():
    expected = (LldbTraceError,)
    assert run_limited(answer, 21, expected, QUICK) == Outcome(ANSWER, "42")
    assert run_limited(one_line, None, expected, QUICK) == Outcome(ERROR, "LldbTraceError: the input is bad: fix it")
    for target, says in (
        (two_lines, "LldbTraceError not on one line"),
        (bug, "KeyError: 'missing'"),
        (greedy, "memory: MemoryError"),
        (crash, "killed by signal SIGSEGV"),
    ):
        outcome = run_limited(target, None, expected, QUICK)
        assert outcome.kind == FAILURE and says in outcome.detail
    outcome = run_limited(spin, None, expected, Limits(seconds=0.5))
    assert outcome.kind == FAILURE and outcome.detail == "timeout: no answer within 0.5s"


def test_a_campaign_keeps_only_the_failing_inputs(tmp_path):
    def read(path):
        with open(path, "rb") as file:
            data = file.read()
        if data == b"bug":
            raise ValueError("a bug")
        if data == b"bad":
            raise LldbTraceError(f"{path}: bad input 17")
        return len(data)

    inputs = [("a", b"fine", "ok"), ("b", b"bad", "refused"), ("c", b"bug", "crashes"), ("d", b"bad", "again")]
    tally = run_campaign(inputs, read, (LldbTraceError,), tmp_path, QUICK, ".in")
    assert tally.counts == {ANSWER: 1, ERROR: 2, FAILURE: 1}
    assert tally.messages == {"LldbTraceError: FILE: bad input N": 2}
    assert [(label, description) for label, description, _ in tally.failures] == [("c", "crashes")]
    assert sorted(os.listdir(tmp_path)) == ["c.in"]
    assert tally.report()[0] == "answer: 1, error: 2, failure: 1 (of 4)"
    assert len(tally.slowest) == 4 and all(seconds > 0 for seconds, _, _ in tally.slowest)
