"""Comparing call forests column for column (test_forest_bulk.py, test_piece_forest.py)."""

import numpy as np

from lldb_trace.decode import DecodedThread, process_image
from lldb_trace.decode.call_forest import CallForest
from lldb_trace.decode.parallel import ForestMaker, decode_pieces
from lldb_trace.decode.plt import PltSections

COLUMNS = ("first", "last", "parent", "depth", "entry", "extra_rows", "extra_values", "flags")


def rows(forest):
    """Everything a forest says: its columns and each row's call item."""
    return {name: getattr(forest, name) for name in COLUMNS} | {
        "call items": [forest.call_item(row) for row in range(len(forest))]
    }


def assert_joins_alike(trace, tid, piece_counts):
    """The forest joined from pieces of ``trace`` (a ProcessTrace), cut into each of ``piece_counts``, whose
    forests were built where they were decoded, equals the single pass's."""
    plt = PltSections(trace.process.modules)
    expected = rows(CallForest(trace.decoded(tid), trace.expander, trace.functions, plt))
    image, forest = process_image(trace.process), ForestMaker(trace.functions, plt)
    for pieces in piece_counts:
        parts = decode_pieces(trace.trace_bytes(tid), trace.cpu, image, trace.expander, pieces, forest=forest)
        assert all(part.piece_forest is not None for part in parts)
        decoded = DecodedThread(parts)
        built = rows(CallForest(decoded, trace.expander, trace.functions, plt))
        assert all(part.piece_forest is None for part in decoded.parts)  # let go of once joined
        for name in COLUMNS:
            assert built[name].dtype == expected[name].dtype, (name, pieces)
            assert np.array_equal(built[name], expected[name]), (name, pieces)
        assert built["call items"] == expected["call items"], pieces
