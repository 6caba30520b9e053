"""A DecodedPart sent from a decoding child process to its parent as raw columns, not pickled.

A pickled part is built whole in the child, read whole into one bytes object
by the parent and unpickled into a second copy: two copies of every piece at
once.  Here the child writes a small JSON header (the part's scalars, its
cut, the gaps' texts, and each column's type code and length) and then each
column's raw bytes, emptying each once written; the parent allocates each
column at its final size and reads the file straight into it, so a piece
exists once in the parent.  A piece's call forest (piece_forest.py) travels
with it the same way.
"""

import json
import struct
from array import array

import numpy as np

from ..libipt import PacketType
from .decoded_thread import DecodedPart
from .gap_table import GapTable
from .piece_forest import PieceForest
from .truncation import Cut

_LENGTH = struct.Struct("<Q")
_SCALARS = (int, float, str, bool, type(None))


class PartTransferError(Exception):
    """The stream ended early or does not describe a part (the child died while writing)."""


def write_part(part, out, release=False):
    """Write ``part`` to the binary file ``out``; ``release`` empties each column once written (the part is
    not used after), so that a child's memory shrinks as the file grows."""
    header, columns = _describe(part)
    text = json.dumps(header).encode()
    out.write(_LENGTH.pack(len(text)))
    out.write(text + bytes(_padding(len(text))))
    for column in columns:
        out.write(memoryview(column).cast("B"))
        out.write(bytes(_padding(len(column) * column.itemsize)))
        if release:
            del column[:]


def read_part(data):
    """The DecodedPart that write_part wrote, from ``data`` (bytes, or a mapped file's memoryview); raises
    PartTransferError if it is incomplete.  Each of the part's columns is copied once, straight into its
    array.  Where ``data`` is writable (a mapped file), the call forest's columns stay there, as numpy
    arrays, which keep the mapping alive: the join moves them in place and copies them once, to the
    whole forest's."""
    reader = _Reader(data)
    (length,) = _LENGTH.unpack(reader.take(_LENGTH.size))
    header = json.loads(bytes(reader.take(length)))
    reader.take(_padding(length))
    part = DecodedPart.__new__(DecodedPart)
    gaps = GapTable.__new__(GapTable)
    forest = PieceForest.__new__(PieceForest)
    forest.mapped = {}  # column name -> (mapping, offset, size) of those left in the mapped file
    owners = {"part": part, "gaps": gaps, "forest": forest}
    for owner, name, typecode, count in header["columns"]:
        column = array(typecode)
        values = reader.take(count * column.itemsize)
        reader.take(_padding(len(values)))
        if owner == "forest" and not values.readonly:
            column = np.frombuffer(values, dtype=typecode)
            forest.mapped[name] = (reader.view.obj, reader.at - len(values) - _padding(len(values)), len(values))
        else:
            column.frombytes(values)
        setattr(owners[owner], name, column)
    vars(part).update(header["part"])
    vars(gaps).update(header["gaps"])
    if header["forest"] is not None:
        vars(forest).update(header["forest"])
        part.piece_forest = forest
    gaps._text_ids = {text: k for k, text in enumerate(gaps._text_table)}
    part.gaps = gaps
    cut = header["truncation"]
    if cut is not None and cut["packet"] is not None:
        cut["packet"] = PacketType(cut["packet"])
    part.truncation = None if cut is None else Cut(**cut)
    return part


def _describe(part):
    """``(header, columns)``: the part's scalars and column descriptions, and the columns in that order."""
    header = {"part": {}, "gaps": {}, "forest": None, "columns": [], "truncation": None}
    columns = []
    owners = [("part", vars(part)), ("gaps", vars(part.gaps))]
    if part.piece_forest is not None:  # its columns, and its other fields (plain JSON data) in the header
        owners.append(("forest", vars(part.piece_forest)))
        header["forest"] = {}
    for owner, fields in owners:
        for name, value in fields.items():
            if isinstance(value, array):
                header["columns"].append((owner, name, value.typecode, len(value)))
                columns.append(value)
            elif name == "_text_table":
                header["gaps"][name] = value
            elif owner == "forest":
                header["forest"][name] = value
            elif isinstance(value, _SCALARS) and name != "truncation":
                header[owner][name] = value
    if part.truncation is not None:
        cut = part.truncation
        packet = None if cut.packet is None else int(cut.packet)
        header["truncation"] = {"offset": cut.offset, "packet": packet, "present": cut.present, "size": cut.size}
    return header, columns


def _padding(size):
    """Bytes after ``size`` bytes to the next multiple of 8, so that every column is aligned for numpy."""
    return -size % 8


class _Reader:
    """Consecutive slices of ``data``, each checked to be there in full."""

    def __init__(self, data):
        self.view, self.at = memoryview(data).cast("B"), 0

    def take(self, size):
        if self.at + size > len(self.view):
            raise PartTransferError(f"the data ended after {len(self.view) - self.at} of {size} bytes")
        self.at += size
        return self.view[self.at - size : self.at]
