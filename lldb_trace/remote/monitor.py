"""``qRcmd`` (GDB's ``monitor``, LLDB's ``process plugin packet monitor``): the history commands over the wire.

``goto begin|end|N [--thread TID]`` moves a thread (the current one: the
thread GDB last read registers of, which is not always the one its ``thread``
command selected); ``find`` lists executions
newest first (a function's calls, a line's starts, an address's executions,
or the writes and reads of memory); ``info`` says where each thread stands.
GDB keeps the registers it read before a ``monitor goto``: its
``maint flush register-cache`` shows the new position.
"""

from __future__ import annotations

import shlex

from ..errors import LldbTraceError
from ..history import queries
from ..values.accesses import accesses as values_accesses
from .replay import Replay, check_position

HELP = """monitor commands of lldb-trace serve:
  goto begin|end|N          move the current thread to instruction N of its history
    [--thread TID]          (the thread GDB last read registers of, marked by info) or thread TID
  find FUNCTION             calls of FUNCTION (a name or a glob), newest first
  find FILE:LINE            executions of a source line
  find *ADDRESS             executions of the instruction at ADDRESS
  find --write ADDRESS [--size N]   instructions that wrote any of N bytes at ADDRESS (--read: read)
  (find takes --limit N, default 20, 0: all)
  info                      every thread's position
  bt                        the current thread's frames as the trace's calls give them (no values needed)
  help                      this list"""
DEFAULT_LIMIT = 20


def run(replay: Replay, text: str) -> str:
    """What the command prints (a one-line error is an answer too: the client shows it)."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        return f"error: {error}\n"
    if not words or words[0] == "help":
        return HELP + "\n"
    command, arguments = words[0], words[1:]
    try:
        if command == "goto" and len(arguments) == 1:
            return _goto(replay, arguments[0], replay.current)
        if command == "goto" and len(arguments) == 3 and arguments[1] in ("--thread", "-t"):
            return _goto(replay, arguments[0], _thread(replay, arguments[2]))
        if command == "find" and arguments:
            return _find(replay, arguments)
        if command == "info" and not arguments:
            return _info(replay)
        if command == "bt" and not arguments:
            return _frames(replay)
    except LldbTraceError as error:
        return f"error: {error}\n"
    return f"error: unknown monitor command '{text.strip()}' (monitor help lists them)\n"


def _goto(replay: Replay, word: str, tid: int) -> str:
    history = replay.thread(tid).history
    replay.goto(tid, check_position(replay, tid, word))
    replay.last_stop = replay.initial_stop(tid) if history.at_end else replay.last_stop
    moved = f"Thread {tid}: " if len(replay.threads) > 1 else ""
    return f"{moved}Position: {history.describe()}.\n(in GDB, 'maint flush register-cache' then shows it)\n"


def _thread(replay: Replay, word: str) -> int:
    try:
        tid = int(word, 0)
    except ValueError:
        tid = None
    if tid not in replay.threads:
        known = ", ".join(map(str, replay.threads))
        raise LldbTraceError(f"--thread {word}: no such thread; the trace's threads are {known}")
    return tid


def _info(replay: Replay) -> str:
    lines = [f"process {replay.pid}: {replay.trace.bundle.path}"]
    for tid, thread in replay.threads.items():
        history = thread.history
        mark = "*" if tid == replay.current else " "
        values = "values recovered" if replay.can_watch(tid) else "pc only (no core or recorded state)"
        lines.append(f"{mark} thread {tid} at position {history.position}: {history.describe()}; {values}")
    return "\n".join(lines) + "\n"


def _frames(replay: Replay) -> str:
    thread = replay.thread(replay.current)
    lines = []
    for number, frame in enumerate(thread.history.frames()):
        location = thread.locate(frame.pc) if frame.pc is not None else None
        where = location.function_label if location is not None else "?"
        source = f" at {location.source}" if location is not None and location.source else ""
        pc = f"{frame.pc:#018x}" if frame.pc is not None else "?"
        lines.append(f"#{number} {pc} {where}{source}")
    return "\n".join(lines) + "\n"


def _find(replay: Replay, arguments: list[str]) -> str:
    thread = replay.thread(replay.current)
    limit, size, access, target = DEFAULT_LIMIT, 1, None, None
    words = iter(arguments)
    for word in words:
        if word in ("--limit", "--size"):
            value = _number(next(words, ""), word)
            if value < (0 if word == "--limit" else 1):
                raise LldbTraceError(f"{word} needs {'0 (all) or more' if word == '--limit' else '1 or more'}")
            limit, size = (value, size) if word == "--limit" else (limit, value)
        elif word in ("--write", "--read"):
            access = word[2:]
        elif target is None:
            target = word
        else:
            raise LldbTraceError(f"find takes one thing to find, not '{word}' too")
    if target is None:
        raise LldbTraceError("find needs what to find: FUNCTION, FILE:LINE, *ADDRESS or --write ADDRESS")
    asked = limit + 1 if limit else None  # one more: whether the list goes on
    more = f"... and more: --limit N shows more than {limit}\n"
    if access is not None:
        address = _number(target, "the address")
        written, read = (address, None) if access == "write" else (None, address)
        accesses = values_accesses(thread.values(), written, read, size, asked)
        cut = bool(limit) and len(accesses) > limit
        accesses = accesses[:limit] if cut else accesses
        lines = [f"{access}s of the {size} byte(s) at {address:#x}, newest first:"]
        for item in accesses:
            old = item.old.hex() if item.old is not None else "?"
            new = item.new.hex() if item.new is not None else "?"
            maybe = "" if item.exact else " (may overlap: address unknown)"
            lines.append(f"  {item.position}  {item.kind} {item.size} bytes: {old} -> {new}{maybe}")
        return "\n".join(lines) + "\n" + (more if cut else "")
    history, symbolizer = thread.history, thread.symbolizer
    if target.startswith("*"):
        matches = queries.find(history, symbolizer, address=_number(target[1:], "the address"), limit=asked)
    elif ":" in target and target.rsplit(":", 1)[1].isdigit():
        file, line = target.rsplit(":", 1)
        matches = queries.find(history, symbolizer, line=(file, int(line)), limit=asked)
    else:
        matches = queries.find(history, symbolizer, function=target, limit=asked)
    cut = bool(limit) and len(matches) > limit
    matches = matches[:limit] if cut else matches
    counted = f"the newest {len(matches)}" if cut else f"{len(matches)}"
    lines = [f"{counted} execution(s) of {target}, newest first ('monitor goto N' goes to one):"]
    for match in matches:
        location = thread.locate(thread.history.pc_at(match.index))
        where = location.function_label if location is not None else "?"
        source = f" at {location.source}" if location is not None and location.source else ""
        lines.append(f"  {match.index}  {where}{source}")
    return "\n".join(lines) + "\n" + (more if cut else "")


def _number(word: str, what: str) -> int:
    try:
        return int(word, 0)
    except ValueError:
        raise LldbTraceError(f"{what} needs a number, not '{word}'") from None
