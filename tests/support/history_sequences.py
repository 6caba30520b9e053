"""Random walks through history for the fuzz campaigns: movements, gotos, searches and stacks, checked as they go.

A sequence is JSON (so a failing one can be kept and replayed): the seed
scenario, the thread, and one to forty commands, drawn from a
``random.Random`` seeded by the campaign's seed and the sequence's number.
Positions and addresses are drawn from the thread's own history (gaps and
both ends included) and from outside it.  ``run`` plays a sequence on the
Trace opened from the seed and checks after every command that the thread
stands where a thread can (in range, never on a gap) and that its frames
and pc can be told; a HistoryError (a refusal on one line) is an answer.
"""

import json
import random

from lldb_trace.errors import LldbTraceError

MOVEMENTS = ("stepi", "nexti", "step", "next", "finish")
NAMES = ("main", "descend", "worker", "m*", "*", "__libc_start_call_main", "no_such_function", "")


def sequences(traces, count, seed=0, first=0):
    """``(label, bytes, description)`` of sequences ``first`` to ``first + count - 1`` on ``traces``
    (``{seed name: api.Trace}``)."""
    names = sorted(traces)
    for number in range(first, first + count):
        rng = random.Random(f"history:{seed}:{number}")
        name = rng.choice(names)
        thread = rng.choice(traces[name].threads)
        commands = [_command(rng, thread) for _ in range(rng.randrange(1, 41))]
        text = json.dumps({"seed": name, "tid": thread.tid, "commands": commands})
        yield f"history-{seed}-{number}", text.encode(), f"{name} tid {thread.tid}: {len(commands)} commands"


def _command(rng, thread):
    end = thread.item_count
    positions = [0, end, end - 1, end // 2, -1, end + 1, rng.randrange(end + 1) if end else 0]
    positions += [gap.index for gap in thread.process_trace.decoded(thread.tid).gaps[:8]]
    kind = rng.choice(("move", "move", "move", "move", "goto", "continue", "find", "stack"))
    if kind == "move":
        return ["move", rng.choice(MOVEMENTS), rng.random() < 0.5]
    if kind == "goto":
        return ["goto", rng.choice(positions)]
    if kind == "stack":
        return ["stack", rng.choice(positions)]
    addresses = [_address(thread, rng.choice(positions)) for _ in range(rng.randrange(4))]
    if kind == "continue":
        return ["continue", [a for a in addresses if a is not None] + [rng.randrange(1 << 48)], rng.random() < 0.5]
    return ["find", rng.choice(("function", "address")), rng.choice(NAMES) if rng.random() < 0.5 else addresses[:1]]


def _address(thread, index):
    try:
        return thread.item(index).address
    except (IndexError, LldbTraceError):
        return None


def run(traces, path):
    """Play the sequence in the file ``path`` on ``traces``; how many commands were answered and refused."""
    with open(path) as file:
        sequence = json.load(file)
    thread = traces[sequence["seed"]].thread(sequence["tid"])
    history = thread.history
    answered = refused = 0
    for command in sequence["commands"]:
        try:
            _play(thread, history, command)
            answered += 1
        except LldbTraceError as error:
            if "\n" in str(error) or not str(error):
                raise AssertionError(f"{command}: not one line: {error!r}") from error
            refused += 1
        _check(history, command)
    return answered, refused


def _play(thread, history, command):
    what = command[0]
    if what == "move":
        getattr(history, command[1])(reverse=command[2])
    elif what == "goto":
        thread.goto(command[1])
    elif what == "stack":
        thread.stack_at(command[1])
    elif what == "continue":
        history.continue_(command[1], reverse=command[2])
    elif command[1] == "function":
        thread.find(function=command[2] if isinstance(command[2], str) else "main", limit=20)
    elif command[2] and command[2][0] is not None:
        thread.find(address=command[2][0], limit=20)


def _check(history, command):
    position = history.position
    if not 0 <= position <= history.end:
        raise AssertionError(f"after {command}: position {position} outside 0..{history.end}")
    if position < history.end and history.map.is_gap(position):
        raise AssertionError(f"after {command}: standing on the gap at {position}")
    if not history.frames() or history.pc is None:
        raise AssertionError(f"after {command}: no frames or pc at {position}")
