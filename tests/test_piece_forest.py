"""Call forests built per piece where the pieces are decoded, then joined, are the single pass's (piece_forest.py).

Every committed bundle is cut into 2 to 8 pieces, decoded by forked children as `trace load` decodes a
large trace; each child builds its piece's forest over frames it does not know and sends it back with
the piece (part_transfer.py).  The joined forest must equal the single pass's column for column, with
the compiled loops and with their Python fallback.  Both ends of a join are exercised: pieces whose
assumptions hold and are joined as they are, and pieces built again (an assumption failed, tracing
stopped at the cut, the piece began a new tree).  test_forest_bulk.py does the same on forest_mix.c.
"""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.forests import COLUMNS, assert_joins_alike, rows
from support.paths import TRACES
from test_decoder_fuzz import FUZZ, basic, mutated, time_limit  # noqa: F401 (basic: a fixture)

import lldb_trace.api as api
from lldb_trace.decode import DecodedThread, forest_join, parallel, process_image
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.compiled_loop import ENVIRONMENT
from lldb_trace.decode.parallel import ForestMaker, decode_pieces, psb_offsets
from lldb_trace.decode.plt import PltSections

BUNDLES = sorted(path.parent for path in TRACES.rglob("trace.json"))


@pytest.fixture
def joins(monkeypatch):
    """How the pieces that came with a forest fared: "joined" or "built again" (a Counter that fills)."""
    counted, joined = collections.Counter(), forest_join.PieceJoins.joined

    def counting(self, builder, k, base, next_ip):
        had = self.parts[k].piece_forest is not None
        done = joined(self, builder, k, base, next_ip)
        if had:
            counted["joined" if done else "built again"] += 1
        return done

    monkeypatch.setattr(forest_join.PieceJoins, "joined", counting)
    return counted


def threads_with_traces(bundle):
    for thread in api.open_bundle(bundle, workers=1).threads:
        if thread.process_trace.decoded(thread.tid) is not None:
            yield thread.process_trace, thread.tid


@pytest.mark.parametrize("loops", ["compiled", "python"])
def test_every_committed_bundle_joins_to_the_single_pass(loops, joins, monkeypatch):
    if loops == "python":
        monkeypatch.setenv(ENVIRONMENT, "python")
    for bundle in BUNDLES:
        for trace, tid in threads_with_traces(bundle):
            assert_joins_alike(trace, tid, (2, 3, 8))
    assert joins["joined"] > 100 and joins["built again"] > 20, joins


def test_a_failed_assumption_builds_the_piece_again(joins, monkeypatch):
    """With every assumption taken as false, every piece after the first is built again, and the forest is
    still the single pass's."""
    monkeypatch.setattr(forest_join._Frames, "holds", lambda frames, assumption: False)
    trace, tid = next(threads_with_traces(TRACES / "cycles"))
    assert_joins_alike(trace, tid, (4,))
    assert joins == {"joined": 1, "built again": 3}  # the first piece assumes nothing


def test_trace_load_builds_the_forest_in_the_decoding_children(joins, monkeypatch):
    monkeypatch.setattr(parallel, "PIECE_MIN_BYTES", 1)
    monkeypatch.setattr("lldb_trace.decode.PIECE_MIN_BYTES", 1)
    bundle = TRACES / "cycles"
    threads = api.open_bundle(bundle, workers=1).threads
    single = {thread.tid: rows(thread.process_trace.call_forest(thread.tid)) for thread in threads}
    threads = api.open_bundle(bundle, workers=4).threads
    for thread in threads:
        trace = thread.process_trace
        assert trace.decoded(thread.tid).parts[0].piece_forest is None  # a decode alone builds no forest
    for thread in api.open_bundle(bundle, workers=4).threads:
        built = rows(thread.process_trace.call_forest(thread.tid))
        for name in COLUMNS:
            assert np.array_equal(built[name], single[thread.tid][name]), name
    assert joins["joined"] >= 2


def test_a_piece_forest_that_fails_costs_its_join_not_the_decode(joins, monkeypatch):
    """A fault building a piece's forest (here: in every child) leaves the piece decoded, without a forest."""

    def failing(part, next_ip, expander, forest, outer, task):
        raise RuntimeError("a fault in the piece's forest")

    monkeypatch.setattr(parallel, "build_piece", failing)
    trace, tid = next(threads_with_traces(TRACES / "cycles"))
    plt = PltSections(trace.process.modules)
    forest = ForestMaker(trace.functions, plt)
    image = process_image(trace.process)
    parts = decode_pieces(trace.trace_bytes(tid), trace.cpu, image, trace.expander, 4, forest=forest)
    assert len(parts) == 4 and not any(part.piece_forest for part in parts) and not any(part.gaps for part in parts)
    decoded = DecodedThread(parts)
    assert decoded.item_count == trace.decoded(tid).item_count
    assert len(CallForest(decoded, trace.expander, trace.functions, plt)) == len(trace.call_forest(tid))
    assert not joins


@settings(FUZZ, max_examples=60)  # 4 forked decoders an example; test_decoder_fuzz decodes 150 such in pieces
@given(data=st.data())
def test_a_damaged_trace_joins_as_its_pieces_build_one_after_another(basic, data):  # noqa: F811 (the fixture)
    """Whatever a damaged trace decodes to (gaps, errors, pieces that resynchronize), the forest joined from
    its pieces' forests is the one built over the same pieces in one pass."""
    trace, image, real = basic
    damaged = data.draw(mutated(real, psb_offsets(real)))
    if not damaged:
        return
    plt = PltSections(trace.process.modules)
    with time_limit():
        parts = decode_pieces(damaged, trace.cpu, image, trace.expander, 4, forest=ForestMaker(trace.functions, plt))
        forests = [part.piece_forest for part in parts]
        for part in parts:
            part.piece_forest = None
        expected = rows(CallForest(DecodedThread(parts), trace.expander, trace.functions, plt))
        for part, forest in zip(parts, forests, strict=True):
            part.piece_forest = forest
        built = rows(CallForest(DecodedThread(parts), trace.expander, trace.functions, plt))
    for name in COLUMNS:
        assert np.array_equal(built[name], expected[name]), name
    assert built["call items"] == expected["call items"]
