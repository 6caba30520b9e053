"""A perf.data cut into the parts that mutations work on, and put back together with its offsets right.

:class:`PerfLayout` holds the file header, the ids and attribute table (as
bytes), each record of the data section (an AUXTRACE record with the trace
bytes that follow it) and each feature section.  :meth:`PerfLayout.pack`
writes the data section's size and the feature table from what the records
and sections now are, so a change to one record leaves the rest of the file
consistent; a mutation that wants a lie in the table says so
(``table_override``).  Only the layout lldb_trace's writer gives (features
right after the data section) is parsed: the seeds are its files.
"""

import struct
from dataclasses import dataclass, field

HEADER = struct.Struct("<IHH")
SECTION = struct.Struct("<QQ")
AUXTRACE = 71


@dataclass
class Record:
    """One record as the file holds it; ``trace`` is an AUXTRACE record's bytes (that follow it)."""

    raw: bytearray
    trace: bytes = b""

    @property
    def type(self):
        return HEADER.unpack_from(self.raw)[0]


@dataclass
class PerfLayout:
    """A perf.data cut into the parts mutations work on; :meth:`pack` puts it back together."""

    head: bytearray  # the file header, the ids and the attribute table: everything before the data section
    records: list
    features: list = field(default_factory=list)  # [feature bytes] in table order
    table_override: dict = field(default_factory=dict)  # table index -> (offset, size) a mutation chose

    @classmethod
    def parse(cls, data):
        start, size = struct.unpack_from("<QQ", data, 40)
        records, offset = [], start
        while offset < start + size:
            _, _, length = HEADER.unpack_from(data, offset)
            record = Record(bytearray(data[offset : offset + length]))
            offset += length
            if record.type == AUXTRACE:
                (trace_size,) = struct.unpack_from("<Q", record.raw, 8)
                record.trace = bytes(data[offset : offset + trace_size])
                offset += trace_size
            records.append(record)
        bits = int.from_bytes(data[72:104], "little")
        table = start + size
        features = []
        for k in range(bin(bits).count("1")):
            at, length = SECTION.unpack_from(data, table + k * SECTION.size)
            features.append(bytes(data[at : at + length]))
        return cls(bytearray(data[:start]), records, features)

    def pack(self):
        body = b"".join(bytes(r.raw) + r.trace for r in self.records)
        head = bytearray(self.head)
        start = struct.unpack_from("<Q", head, 40)[0]
        struct.pack_into("<Q", head, 48, len(body))
        table_start = start + len(body)
        blob_at = table_start + SECTION.size * len(self.features)
        table = bytearray()
        for k, blob in enumerate(self.features):
            offset, size = self.table_override.get(k, (blob_at, len(blob)))
            table += SECTION.pack(offset % (1 << 64), size)  # a lied-about data section pushes it past 2**64
            blob_at += len(blob)
        return bytes(head) + body + bytes(table) + b"".join(self.features)

    def indices(self, kind=None):
        return [k for k, r in enumerate(self.records) if kind is None or r.type == kind]
