"""Running one callable on one hostile input in a forked child with limits, and saying how it ended.

The generic half of the fuzz campaigns (tests/fuzz_campaign.py): what is
mutated, and what is done with a mutant, belong to the callers.  Each run
forks, so whatever the parent warmed (imported modules, parsed binaries) is
shared, and nothing one mutant does (a leak, a cache, a crash) reaches the
next.  The child gets an address-space limit (RLIMIT_AS: what it inherited
mapped, plus the limit's bytes, so a test process that grew earlier does not
leave a mutant less room) and the parent a wall-clock limit; the child's
output goes to /dev/null.

An outcome is one of:

- ``answer``: the callable returned (its value, made printable, is kept);
- ``error``: it raised one of the ``expected`` exception types with a
  one-line message (a user-facing error such as LldbTraceError);
- ``failure``: anything else: another exception (its traceback is kept), an
  expected type with a message of several lines or none, MemoryError (the
  memory limit), a signal, a timeout, or a child that died without a word.
"""

import faulthandler
import multiprocessing
import os
import re
import resource
import signal
import time
import traceback
from dataclasses import dataclass, field

ANSWER, ERROR, FAILURE = "answer", "error", "failure"
SLOWEST = 5  # how many of the slowest inputs a Tally keeps
_CONTEXT = multiprocessing.get_context("fork")


@dataclass(frozen=True)
class Outcome:
    """How one run ended: ``kind`` (answer, error or failure), what it said (a value, a message, a traceback),
    and how long it took (wall-clock seconds, for finding the inputs that come close to the limit)."""

    kind: str
    detail: str
    seconds: float = field(default=0.0, compare=False)

    @property
    def failed(self):
        return self.kind == FAILURE


@dataclass(frozen=True)
class Limits:
    """What one run may use: wall-clock seconds and bytes of address space beyond what it starts with."""

    seconds: float = 20.0
    memory: int = 2 << 30


def run_limited(target, argument, expected, limits=None):
    """Run ``target(argument)`` in a forked child under ``limits`` (a Limits); its Outcome (see the module doc)."""
    limits = limits or Limits()
    started = time.monotonic()
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child, args=(sender, target, argument, tuple(expected), limits.memory))
    child.start()
    sender.close()
    try:
        if not receiver.poll(limits.seconds):
            return Outcome(FAILURE, f"timeout: no answer within {limits.seconds:g}s", limits.seconds)
        try:
            kind, detail = receiver.recv()
        except EOFError:
            child.join(limits.seconds)
            kind, detail = FAILURE, _death(child.exitcode)
        return Outcome(kind, detail, time.monotonic() - started)
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()


def _child(sender, target, argument, expected, memory):
    faulthandler.disable()  # a crash is the parent's to report (pytest's handler writes to a copy of stderr)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    mapped = _mapped_bytes()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + memory, mapped + memory))
    sender.send(_classify(target, argument, expected))
    sender.close()


def _mapped_bytes():
    """The address space this process has mapped (VmSize), inherited from the parent at the fork."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _classify(target, argument, expected):
    """``(kind, detail)`` of one call, in the child."""
    try:
        value = target(argument)
    except MemoryError:
        return FAILURE, "memory: MemoryError\n" + traceback.format_exc()
    except expected as error:
        message = str(error)
        if not message or "\n" in message:
            return FAILURE, f"{type(error).__name__} not on one line: {message!r}\n" + traceback.format_exc()
        return ERROR, f"{type(error).__name__}: {message}"
    except BaseException:  # anything else is what the campaign looks for
        return FAILURE, traceback.format_exc()
    return ANSWER, repr(value)[:2000]


def _death(exitcode):
    if exitcode is not None and exitcode < 0:
        return f"killed by signal {signal.Signals(-exitcode).name}"
    return f"the child exited ({exitcode}) without an answer"


@dataclass
class Tally:
    """What a campaign found: outcomes per kind, the errors' messages, and each failure with its input."""

    counts: dict
    messages: dict  # an error message (FILE for the input's path, N for every number) -> how many gave it
    failures: list  # (label, description, Outcome)
    slowest: list = field(default_factory=list)  # (seconds, label, description) of the slowest few, slowest first

    @property
    def total(self):
        return sum(self.counts.values())

    def report(self, top=12):
        """Lines for a person: the counts, the commonest errors, every failure's label and first lines."""
        lines = [", ".join(f"{kind}: {self.counts[kind]}" for kind in (ANSWER, ERROR, FAILURE)) + f" (of {self.total})"]
        for message, count in sorted(self.messages.items(), key=lambda pair: -pair[1])[:top]:
            lines.append(f"  {count:6d}  {message}")
        lines += [f"  slow: {seconds:.1f}s {label}: {description}" for seconds, label, description in self.slowest]
        for label, description, outcome in self.failures:
            lines.append(f"FAILURE {label}: {description}")
            lines += [f"    {line}" for line in outcome.detail.strip().splitlines()[-6:]]
        return lines


def run_campaign(inputs, target, expected, folder, limits=None, suffix="", on_outcome=None):
    """Run ``target(path)`` on each of ``inputs`` (``(label, bytes, description)``), each written to ``folder``.

    A failing input is kept there as ``<label><suffix>``; the others are removed.  ``on_outcome(label,
    description, outcome)`` hears each outcome as it comes.  Returns the Tally.
    """
    tally = Tally(dict.fromkeys((ANSWER, ERROR, FAILURE), 0), {}, [])
    for label, data, description in inputs:
        path = os.path.join(folder, f"{label}{suffix}")
        with open(path, "wb") as file:
            file.write(data)
        outcome = run_limited(target, path, expected, limits)
        tally.counts[outcome.kind] += 1
        tally.slowest = sorted([*tally.slowest, (outcome.seconds, label, description)], reverse=True)[:SLOWEST]
        if outcome.kind == ERROR:
            message = re.sub(r"\d+", "N", outcome.detail.replace(path, "FILE"))[:160]
            tally.messages[message] = tally.messages.get(message, 0) + 1
        if outcome.failed:
            tally.failures.append((label, description, outcome))
        else:
            os.remove(path)
        if on_outcome is not None:
            on_outcome(label, description, outcome)
    return tally
