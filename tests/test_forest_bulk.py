"""The call forest built in bulk (regular_runs.py) is the one-branch-at-a-time visit's, column for column.

The visit is the reference: it follows every irregular case (PLT stubs and lazy binding, tail
calls, longjmp, signal handlers, swapcontext, untraced callees, gaps, untraced callers).  The bulk
build must give the same rows on every committed bundle, with every run of regular branches built
in bulk (shortest run 1), at the default threshold, and with the branches judged a few at a time
(runs cut at every seam), each with the compiled loops (forest_runs.c) and with their numpy
fallback, and on forest_mix.c, a program that mixes all of those cases into long regular
stretches: recorded and decoded whole and in pieces (and joined from forests built per piece, as
test_piece_forest.py checks on the committed bundles), and recorded live (where its clock reads
run untraced in the vdso).  test_forest_compiled.py stresses the compiled loops further.
"""

import subprocess
import sys

import numpy as np
import pytest
from support.forests import COLUMNS, assert_joins_alike, rows
from support.paths import SOURCES, TRACES

import lldb_trace.api as api
from lldb_trace.decode import DecodedThread, forest_builder, process_image, regular_runs
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.compiled_loop import ENVIRONMENT
from lldb_trace.decode.forest_builder import (
    ASYNCHRONOUS,
    LAZY_BINDING,
    LEFT_NON_LOCALLY,
    SHORTEST_RUN,
    SWITCHED,
    TAIL_CALL,
    UNTRACED_START,
)
from lldb_trace.decode.parallel import decode_pieces
from lldb_trace.decode.plt import PltSections
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

BUNDLES = sorted(path.parent for path in TRACES.rglob("trace.json"))
SOURCE = SOURCES / "forest_mix.c"
LIBRARY = SOURCES / "forest_mix_lib.c"
EVERY_KIND = (UNTRACED_START, LAZY_BINDING, TAIL_CALL, ASYNCHRONOUS, LEFT_NON_LOCALLY, SWITCHED)


def assert_built_alike(decoded, expander, functions, plt):
    """The bulk builds equal the reference visit, with the compiled loops (forest_runs.c) and with their numpy
    fallback; returns the reference forest."""
    reference = CallForest(decoded, expander, functions, plt, shortest_run=None)
    expected = rows(reference)
    whole = forest_builder.SLICE  # larger than any committed part: the reference takes each part at once
    variants = ((1, regular_runs.CHUNK, whole), (SHORTEST_RUN, regular_runs.CHUNK, whole), (1, 5, whole),
                (None, 0, 3), (1, 5, 7), (SHORTEST_RUN, regular_runs.CHUNK, 64))  # fmt: skip
    for shortest_run, chunk, slice_entries in variants:
        for loops in ("compiled", "python"):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(regular_runs, "CHUNK", chunk or regular_runs.CHUNK)
                patch.setattr(forest_builder, "SLICE", slice_entries)
                if loops == "python":
                    patch.setenv(ENVIRONMENT, "python")
                else:
                    patch.delenv(ENVIRONMENT, raising=False)
                built = rows(CallForest(decoded, expander, functions, plt, shortest_run=shortest_run))
            variant = (shortest_run, chunk, slice_entries, loops)
            for name in COLUMNS:
                assert built[name].dtype == expected[name].dtype, (name, variant)
                assert np.array_equal(built[name], expected[name]), (name, variant)
            assert built["call items"] == expected["call items"], variant
    return reference


def build_library(directory):
    """forest_mix_lib.c as a shared library without unwind tables; the flags that link forest_mix.c with it."""
    flags = ["-shared", "-fPIC", "-O0", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
    subprocess.run(["gcc", *flags, "-o", str(directory / "libforest_mix_lib.so"), str(LIBRARY)], check=True)
    return ["-Wl,-z,lazy", f"-L{directory}", "-Wl,--no-as-needed", "-lforest_mix_lib", f"-Wl,-rpath,{directory}"]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda path: str(path.relative_to(TRACES)))
def test_every_committed_bundle_builds_alike(bundle):
    for thread in api.open_bundle(bundle).threads:
        trace = thread.process_trace
        decoded = trace.decoded(thread.tid)
        if decoded is not None:
            assert_built_alike(decoded, trace.expander, trace.functions, PltSections(trace.process.modules))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """forest_mix.c recorded from main to finished(), with an overflow injected half-way (a gap)."""
    directory = tmp_path_factory.mktemp("forest_mix")
    program = directory / "forest_mix"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(program), str(SOURCE), *build_library(directory)], check=True)
    bundle = directory / "bundle"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(bundle), "--psb-period", "256"]
    options = ["--until", "finished", "--overflow-at", "30000", "--overflow-lost", "200"]
    subprocess.run([*command, *options, "--", str(program)], check=True, capture_output=True)
    return bundle / "trace.json"


@pytest.fixture
def bulk_frames(monkeypatch):
    """How many frames the runs added in bulk (a list that fills as forests are built)."""
    added, add = [], regular_runs.RegularRuns.add

    def counted(runs, start, stop):
        before = len(runs.builder.nodes.first)
        add(runs, start, stop)
        added.append(len(runs.builder.nodes.first) - before)

    monkeypatch.setattr(regular_runs.RegularRuns, "add", counted)
    return added


def test_a_generated_trace_builds_alike_whole_and_in_pieces(mixed, bulk_frames):
    bundle = load_trace(mixed)
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process, workers=1)
    tid = trace.tids[0]
    plt = PltSections(process.modules)
    whole = trace.decoded(tid)
    pieced = DecodedThread(decode_pieces(trace.trace_bytes(tid), trace.cpu, process_image(process), trace.expander, 8))
    assert len(pieced.parts) > 1 and pieced.item_count == whole.item_count
    reference = assert_built_alike(whole, trace.expander, trace.functions, plt)
    assert len(reference) > 2000 and all(np.any(reference.flags & kind) for kind in EVERY_KIND)
    bulk_frames.clear()
    CallForest(whole, trace.expander, trace.functions, plt)
    assert sum(bulk_frames) > len(reference) / 2  # at the default threshold, most frames come from runs
    assert_built_alike(pieced, trace.expander, trace.functions, plt)


def test_a_live_recording_with_untraced_vdso_calls_builds_alike(tmp_path, monkeypatch):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.launching import launchable
    from support.lldb_session import Session

    from lldb_trace.debugger import live_session as live

    binary = launchable(tmp_path, monkeypatch, SOURCE.name, "-O0", "-DROUNDS=2", *build_library(tmp_path))
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main", "-n finished")
        session.ok("process handle SIGUSR1 -s false -p true -n false")  # to the program's handler, unseen
        session.ok("pt start --backend software")
        session.handle("continue")
        target = session.target
        assert target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetFunctionName() == "finished"
        tid = target.GetProcess().GetSelectedThread().GetThreadID()
        live_session = live.session_for(target)
        trace, (vdso_start, vdso_end) = live_session.trace, live_session.backend.vdso
        decoded = trace.decoded(tid)
        untraced = [e for e in decoded.events if e.type.name == "DISABLED" and vdso_start <= (e.ip or 0) < vdso_end]
        assert len(untraced) == 2  # one clock read a round
        assert_built_alike(decoded, trace.expander, trace.functions, PltSections(trace.process.modules))
        target.GetProcess().Kill()
    finally:
        session.close()


def test_a_generated_trace_joins_from_forests_built_per_piece(mixed):
    """Cut at PSBs every few hundred bytes, pieces begin inside every irregular case: each joins or is built
    again, and the forest is the single pass's."""
    trace = ProcessTrace(load_trace(mixed), load_trace(mixed).processes[0], workers=1)
    assert_joins_alike(trace, trace.tids[0], (2, 5, 16, 64))
