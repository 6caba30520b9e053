"""A part's gaps (decode errors) in compact columns, read back as Gap records one at a time.

A damaged or hostile trace can hold a decode error every few dozen bytes:
one record object per gap would cost some 300 bytes each, ten times the
trace itself.  Columns of numbers cost 36 bytes a gap, and a gap's text is
one of a few libipt messages, stored once.
"""

from array import array
from dataclasses import dataclass

from ..libipt import ErrorCode

_NONE = (1 << 64) - 1  # an address column's None
_NO_CODE = -(1 << 31)  # a code column's None (libipt returned a status it does not name)
_CODES = {int(code): code for code in ErrorCode}


@dataclass(frozen=True)
class Gap:
    """A decode error: one item standing for the instructions libipt could not reconstruct."""

    index: int
    code: int
    text: str
    offset: int  # where in the trace buffer decoding failed
    last_ip: int | None  # the last instruction decoded before it
    missing_ip: int | None = None  # where the code was not in the image (a NOMAP error)


class GapTable:
    """A list of Gaps (``append``, ``len``, ``[k]``, ``[k] = gap``, iteration) kept as columns."""

    def __init__(self):
        self._indexes, self._offsets = array("Q"), array("Q")
        self._last_ips, self._missing_ips = array("Q"), array("Q")
        self._codes, self._texts = array("i"), array("I")
        self._text_table, self._text_ids = [], {}

    @property
    def storage_bytes(self):
        columns = (self._indexes, self._offsets, self._last_ips, self._missing_ips, self._codes, self._texts)
        return sum(column.itemsize * len(column) for column in columns) + sum(map(len, self._text_table))

    def append(self, gap):
        self._indexes.append(gap.index)
        self._offsets.append(gap.offset)
        self._last_ips.append(_NONE if gap.last_ip is None else gap.last_ip)
        self._missing_ips.append(_NONE if gap.missing_ip is None else gap.missing_ip)
        self._codes.append(_NO_CODE if gap.code is None else gap.code)
        self._texts.append(self._text_id(gap.text))

    def __setitem__(self, k, gap):
        self._indexes[k], self._offsets[k] = gap.index, gap.offset
        self._last_ips[k] = _NONE if gap.last_ip is None else gap.last_ip
        self._missing_ips[k] = _NONE if gap.missing_ip is None else gap.missing_ip
        self._codes[k] = _NO_CODE if gap.code is None else gap.code
        self._texts[k] = self._text_id(gap.text)

    def __getitem__(self, k):
        code, last_ip, missing_ip = self._codes[k], self._last_ips[k], self._missing_ips[k]
        return Gap(
            self._indexes[k],
            None if code == _NO_CODE else _CODES.get(code, code),
            self._text_table[self._texts[k]],
            self._offsets[k],
            None if last_ip == _NONE else last_ip,
            None if missing_ip == _NONE else missing_ip,
        )

    def __len__(self):
        return len(self._indexes)

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def _text_id(self, text):
        found = self._text_ids.get(text)
        if found is None:
            found = self._text_ids[text] = len(self._text_table)
            self._text_table.append(text)
        return found
