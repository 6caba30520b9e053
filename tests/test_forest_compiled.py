"""The call forest's compiled loops (forest_runs.c) give what their numpy fallback and the reference visit give.

test_forest_bulk.py builds every committed bundle and forest_mix.c both ways; here synthetic traces
push where the committed ones are thin: recursion deeper than the radix sort's 16 bits, many returns
landing elsewhere than their call's return address (longjmp, context switches), returns out of the
tree's first frame, tail calls and jumps into other functions, gaps, several parts, 32-bit rows,
64-bit ordinals and item indices.  Each chunk's runs are compared too, not only the forest.  PLT
stubs and events (signals, untraced callees) are left to the committed bundles and forest_mix.c.
"""

import random
from array import array
from itertools import pairwise
from types import SimpleNamespace

import numpy as np
import pytest

from lldb_trace.decode import DecodedThread, compiled_runs, forest_builder, regular_runs
from lldb_trace.decode.branches import CALL, JUMP, RETURN, PartBranches
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.compiled_loop import ENVIRONMENT
from lldb_trace.decode.decoded_thread import DecodedPart

COLUMNS = ("first", "last", "parent", "depth", "entry", "extra_rows", "extra_values", "flags")
BASE, SPAN, SLOT = 0x10000, 0x1000, 0x10  # function k begins at BASE + k * SPAN; block j of it at j * SLOT

pytestmark = pytest.mark.skipif(
    compiled_runs._load() is None, reason="forest_runs.c was not built (pip install -e . builds it)"
)


class Program:
    """Functions of blocks at fixed addresses, each block ending in one kind of branch, and a run of it."""

    def __init__(self, seed, functions=12, mismatch=0.05):
        self.random, self.mismatch = random.Random(seed), mismatch
        self.blocks = {}  # address -> (size, class, where it goes: callee or jump target)
        for k in range(functions):
            count = self.random.randrange(4, 12)
            for j in range(count):
                kind = RETURN if j == count - 1 else self.random.choice((0, 0, 0, CALL, CALL, JUMP, RETURN, RETURN))
                target = None
                if kind == CALL:
                    target = _entry(self.random.randrange(functions))
                elif kind == JUMP:  # inside, a tail call, or into another function's middle
                    inside = _entry(k) + self.random.randrange(count) * SLOT
                    other = _entry(self.random.randrange(functions))
                    target = self.random.choice((inside, inside, other, other + SLOT))
                self.blocks[_entry(k) + j * SLOT] = (self.random.randrange(1, 5), kind, target)
        recursive = _entry(functions)  # test, recurse, return
        self.blocks |= {recursive: (2, 0, None), recursive + SLOT: (1, CALL, recursive)}
        self.blocks[recursive + 2 * SLOT] = (3, RETURN, None)
        self.recursive, self.functions = recursive, functions

    def run(self, steps, depth=0):
        """The addresses of the blocks that ran (None: a gap); ``depth``: recurse that deep once, half-way."""
        ran, stack, pc = [], [], _entry(0)
        for step in range(steps):
            if step == steps // 2 and depth:
                ran += self._recurse(depth, stack)
            if self.random.random() < 0.002:  # a gap: the frames are lost, and tracing resumes anywhere
                ran.append(None)
                stack, pc = [], _entry(self.random.randrange(self.functions))
            if pc not in self.blocks:
                pc = _entry(self.random.randrange(self.functions))
            _, kind, target = self.blocks[pc]
            ran.append(pc)
            pc = self._next(pc, kind, target, stack)
        return ran

    def _next(self, pc, kind, target, stack):
        if kind == CALL:
            stack.append(pc + SLOT)
            return target
        if kind == JUMP:
            return target
        if kind != RETURN:
            return pc + SLOT
        if not stack or self.random.random() < self.mismatch:  # out of the first frame, a longjmp, a switch
            if stack and self.random.random() < 0.5:
                del stack[-self.random.randrange(1, len(stack) + 1) :]
            return self.random.choice((stack[-1] if stack else pc, _entry(self.random.randrange(self.functions))))
        return stack.pop()

    def _recurse(self, depth, stack):
        """``depth`` nested calls of the recursive function, and their returns."""
        recursive = self.recursive
        return [recursive, recursive + SLOT] * depth + [recursive] + [recursive + 2 * SLOT] * depth

    # -- what the decoder and the symbols would say -----------------------------------------------

    def decoded(self, ran, parts=1, wide_rows=False):
        """A DecodedThread of the blocks that ran, cut in ``parts`` parts."""
        cuts = [len(ran) * k // parts for k in range(parts + 1)]
        return DecodedThread([self._part(ran[a:b], wide_rows) for a, b in pairwise(cuts)])

    def _part(self, ran, wide_rows):
        part, rows = DecodedPart(), {}
        part.block_sequence = array("I" if wide_rows else "H")
        for k, address in enumerate(ran):
            key = ("gap", k) if address is None else address
            if key not in rows:
                rows[key] = len(part.block_ips)
                size, kind, _ = (0, 0, None) if address is None else self.blocks[address]
                part.block_ips.append(k if address is None else address)
                part.block_sizes.append(size)
                part.row_classes.append(kind)
            part.block_sequence.append(rows[key])
            part.item_count += part.block_sizes[rows[key]] or 1
        part.instruction_count = part.item_count
        return part

    def expander(self):
        """Instructions one byte long but each block's last, which reaches the next slot (a call's return)."""
        instructions = {}
        for address, (size, _, _) in self.blocks.items():
            for offset in range(size):
                last = offset == size - 1
                instructions[address + offset] = SimpleNamespace(size=SLOT - offset if last else 1, transfer=None)
        addresses = lambda ip, size: list(range(ip, ip + size))  # noqa: E731
        return SimpleNamespace(addresses=addresses, classifier=instructions)

    def functions_at(self):
        def containing(address):
            k = (address - BASE) // SPAN
            return (_entry(k), _entry(k) + SPAN) if 0 <= k <= self.functions else None

        return SimpleNamespace(containing=containing)


def _entry(k):
    return BASE + k * SPAN


def rows(forest):
    """Everything a forest says: its columns and each row's call item."""
    items = [forest.call_item(row) for row in range(len(forest))]
    return {name: getattr(forest, name) for name in COLUMNS} | {"items": items}


def build(decoded, program, mode, shortest_run, runs=None):
    """The forest built with the compiled loops or the numpy ones; ``runs`` hears every chunk's runs."""
    with pytest.MonkeyPatch.context() as patch:
        if mode == "python":
            patch.setenv(ENVIRONMENT, "python")
        else:
            patch.delenv(ENVIRONMENT, raising=False)
        if runs is not None:
            patch.setattr(regular_runs.RegularRuns, "__init__", _heard(regular_runs.RegularRuns.__init__, runs))
        return CallForest(decoded, program.expander(), program.functions_at(), None, shortest_run=shortest_run)


def _heard(init, runs):
    def heard(self, builder, branches, rows, low, high):
        init(self, builder, branches, rows, low, high)
        columns = (self.calls, self.first, self.last, self.levels, self.parents, self.entries)
        runs.append((list(self.bounds), *(np.array(column) for column in columns)))  # copied: scratch is reused

    return heard


def assert_alike(decoded, program, shortest_runs=(1, forest_builder.SHORTEST_RUN)):
    """Compiled, numpy and reference forests are the same, and so is every chunk's runs both ways."""
    reference = rows(build(decoded, program, "python", None))
    assert_same_rows(reference, rows(build(decoded, program, "compiled", None)), "reference")
    for shortest_run in shortest_runs:
        heard = {"python": [], "compiled": []}
        for mode, runs in heard.items():
            assert_same_rows(reference, rows(build(decoded, program, mode, shortest_run, runs)), (mode, shortest_run))
        assert len(heard["python"]) == len(heard["compiled"]) > 0
        for numpy_runs, compiled in zip(heard["python"], heard["compiled"], strict=True):
            assert numpy_runs[0] == compiled[0]  # the runs' bounds
            for expected, found in zip(numpy_runs[1:], compiled[1:], strict=True):
                assert expected.dtype == found.dtype and np.array_equal(expected, found)
    return reference


def assert_same_rows(expected, found, variant):
    """Column for column, dtypes included, and every row's call item."""
    for name in COLUMNS:
        assert expected[name].dtype == found[name].dtype, (name, variant)
        assert np.array_equal(expected[name], found[name]), (name, variant)
    assert expected["items"] == found["items"], variant


@pytest.mark.parametrize("seed", (0, 1, 2, 6))  # between them: untraced callers, tail calls, exits, switches
def test_random_programs_build_alike(seed, monkeypatch):
    program = Program(seed)
    ran = program.run(20000)
    monkeypatch.setattr(regular_runs, "CHUNK", 997)  # runs cut at many seams
    monkeypatch.setattr(forest_builder, "SLICE", 4099)
    reference = assert_alike(program.decoded(ran, parts=3), program)
    assert len(reference["first"]) > 2000 and np.any(reference["flags"] & forest_builder.LEFT_NON_LOCALLY)
    assert np.any(reference["flags"] & (forest_builder.TAIL_CALL | forest_builder.SWITCHED))


def test_mismatched_returns_everywhere():
    program = Program(7, mismatch=0.5)
    assert_alike(program.decoded(program.run(20000)), program)


def test_recursion_deeper_than_16_bits(monkeypatch):
    """70,000 nested calls in one chunk: levels past the radix sort's 16 bits, and one stack walk that deep."""
    monkeypatch.setattr(regular_runs, "CHUNK", 1 << 18)
    program = Program(3)
    reference = assert_alike(program.decoded(program.run(4000, depth=70000)), program, shortest_runs=(32,))
    assert reference["depth"].max() >= 70000


def test_wide_rows_ordinals_and_items(monkeypatch):
    """32-bit rows; 64-bit ordinals and item indices (a slice or a trace past 2**31 would have them)."""
    program = Program(11)
    decoded = program.decoded(program.run(8000), parts=2, wide_rows=True)
    init = PartBranches.__init__

    def wide_ordinals(self, *arguments):
        init(self, *arguments)
        self.ordinals = self.ordinals.astype(np.int64)

    monkeypatch.setattr(PartBranches, "__init__", wide_ordinals)
    narrow_or_wide = forest_builder.ForestArrays
    monkeypatch.setattr(forest_builder, "ForestArrays", lambda wide: narrow_or_wide(True))
    assert_alike(decoded, program)


def test_a_slices_columns_are_alike(monkeypatch):
    """PartBranches' columns from forest_branches equal numpy's, with tail rows among the ordinals."""
    program = Program(5)
    part = program.decoded(program.run(5000)).parts[0]
    tail_rows = {1, 3, 4}
    built = {}
    for mode in ("python", "compiled"):
        if mode == "python":
            monkeypatch.setenv(ENVIRONMENT, "python")
        else:
            monkeypatch.delenv(ENVIRONMENT)
        branches = PartBranches(part, 100, None, tail_rows, 1000, 3000)
        built[mode] = [branches.sizes, branches.gaps, branches.ends, branches.classes, branches.ordinals]
        assert branches.next_base == 100 + int(branches.sizes[:2000].astype(np.int64).sum())
    for expected, found in zip(built["python"], built["compiled"], strict=True):
        assert expected.dtype == found.dtype and np.array_equal(expected, found)


def test_the_python_code_is_asked_for_by_the_environment(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, " Python ")
    assert compiled_runs.library() is None
    monkeypatch.delenv(ENVIRONMENT)
    assert compiled_runs.library() is not None


def test_a_library_built_from_another_version_is_not_used(monkeypatch):
    monkeypatch.setattr(compiled_runs, "_ABI", compiled_runs._ABI + 1)
    compiled_runs._load.cache_clear()
    try:
        assert compiled_runs._load() is None
    finally:
        monkeypatch.undo()
        compiled_runs._load.cache_clear()
    assert compiled_runs._load() is not None
