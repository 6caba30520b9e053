"""Folded stacks (``caller;callee;leaf weight`` per line), the input of flamegraph.pl, inferno and speedscope.

A stack's weight is the instructions its innermost function executed itself
(or the nanoseconds it ran with ``--weight time``), summed over every call
with that stack.  Stacks are numbered level by level with numpy, so the
work grows with the number of distinct stacks, not of calls; each line is
written as the stack tree is walked, holding one path at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

import numpy as np

if TYPE_CHECKING:
    from .stacks import Job, ThreadCalls

ROOT = -1  # the stack id above the outermost calls


def write(out: TextIO, threads: Iterable[ThreadCalls], job: Job) -> None:
    """Write ``threads`` (ThreadCalls) to ``out``; when there are several, each stack starts with its thread."""
    names = job.names
    table: dict[tuple[int, int], int] = {}  # (parent stack id, name id) -> stack id
    total = np.zeros(0, dtype=np.int64)  # weight per stack id
    for calls in threads:
        top = ROOT
        if job.several_threads:
            thread_name = names.add(f"{calls.thread_name} ({calls.process_name})")
            top = table.setdefault((ROOT, thread_name), len(table))
        stacks = _stack_ids(calls, table, top, len(names.labels))
        total = np.concatenate([total, np.zeros(len(table) - len(total), dtype=np.int64)])
        np.add.at(total, stacks, calls.exclusive())
    _write_tree(out, table, total, names.labels)


def _stack_ids(calls: ThreadCalls, table: dict[tuple[int, int], int], top: int, name_count: int) -> np.ndarray:
    """The stack id of each call: callers are numbered before callees, one depth at a time.

    A (caller's stack, name) pair is one int64 key, ``(stack + 1) * name_count + name``, so that
    np.unique finds a depth's distinct stacks without a Python object per call.
    """
    stacks = np.zeros(len(calls), dtype=np.int64)
    by_depth = np.argsort(calls.depth, kind="stable")
    levels = np.flatnonzero(np.diff(calls.depth[by_depth])) + 1  # where each depth's rows begin in by_depth
    for rows in np.split(by_depth, levels):
        parents = calls.parent[rows]
        above = np.where(parents >= 0, stacks[np.maximum(parents, 0)], top)
        keys, inverse = np.unique((above + 1) * name_count + calls.name[rows], return_inverse=True)
        pairs = zip(*divmod(keys, name_count), strict=True)
        ids = np.array([table.setdefault((int(a) - 1, int(n)), len(table)) for a, n in pairs], dtype=np.int64)
        stacks[rows] = ids[inverse.reshape(-1)]
    return stacks


def _write_tree(out: TextIO, table: dict[tuple[int, int], int], total: np.ndarray, labels: list[str]) -> None:
    """One line per stack with a weight, depth first, holding only the current path."""
    children: dict[int, list[tuple[int, int]]] = {}
    for (above, name), stack in table.items():
        children.setdefault(above, []).append((stack, name))
    safe = [label.replace(";", ":").replace("\n", " ") for label in labels]
    path: list[str] = []
    pending = [(stack, name, 0) for stack, name in reversed(children.get(ROOT, []))]
    while pending:
        stack, name, level = pending.pop()
        del path[level:]
        path.append(safe[name])
        if total[stack] > 0:
            out.write(f"{';'.join(path)} {total[stack]}\n")
        pending.extend((child, child_name, level + 1) for child, child_name in reversed(children.get(stack, [])))
