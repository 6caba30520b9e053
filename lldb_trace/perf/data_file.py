"""The perf.data file layout around the records: header, attribute table, feature sections.

From tools/perf/Documentation/perf.data-file-format.txt.  A file starts with
a 104-byte header (little-endian here):

====== ==== ===========================================================
offset size field
====== ==== ===========================================================
0      8    magic ``PERFILE2`` (``2ELIFREP`` when written big-endian)
8      8    size of this header (104; 16 in a pipe-mode stream)
16     8    ``attr_size``: one attribute table entry, an attr then ``ids``
24     16   ``attrs`` section (offset, size): the attribute table
40     16   ``data`` section: the records
56     16   ``event_types`` section (unused)
72     32   the feature bitmap (256 bits, bit 0 reserved)
====== ==== ===========================================================

Each attribute table entry is a ``struct perf_event_attr`` padded to
``attr_size - 16`` bytes, then a section of the event's u64 ids.  After the
data section, one section (offset, size) per feature bit set, in bit order,
points at that feature's bytes.  Strings in features are a u32 length (of the
padded string) and the NUL-terminated, zero-padded bytes.
"""

import struct
from enum import IntEnum
from typing import NamedTuple

MAGIC = b"PERFILE2"
MAGIC_BIG_ENDIAN = b"2ELIFREP"
MAGIC_VERSION_1 = b"PERFFILE"
FILE_HEADER = struct.Struct("<8sQQ2Q2Q2Q32s")
FILE_HEADER_SIZE = FILE_HEADER.size  # 104
PIPE_HEADER_SIZE = 16
SECTION = struct.Struct("<QQ")
FEATURE_BITS = 256


class Feature(IntEnum):
    """The feature bits (tools/perf/util/header.h), in the order their sections follow the data."""

    TRACING_DATA = 1
    BUILD_ID = 2
    HOSTNAME = 3
    OSRELEASE = 4
    VERSION = 5
    ARCH = 6
    NRCPUS = 7
    CPUDESC = 8
    CPUID = 9
    TOTAL_MEM = 10
    CMDLINE = 11
    EVENT_DESC = 12
    CPU_TOPOLOGY = 13
    NUMA_TOPOLOGY = 14
    BRANCH_STACK = 15
    PMU_MAPPINGS = 16
    GROUP_DESC = 17
    AUXTRACE = 18
    STAT = 19
    CACHE = 20
    SAMPLE_TIME = 21
    MEM_TOPOLOGY = 22
    CLOCKID = 23
    DIR_FORMAT = 24
    BPF_PROG_INFO = 25
    BPF_BTF = 26
    COMPRESSED = 27
    CPU_PMU_CAPS = 28
    CLOCK_DATA = 29
    HYBRID_TOPOLOGY = 30
    PMU_CAPS = 31
    CPU_DOMAIN_INFO = 32
    # lldb_trace's own: how the threads stopped (perf_data/stop_section.py).  The last bit, far from perf's
    # own: perf reads the section table of every bit set but only the sections of the features it knows.
    LLDB_TRACE_STOPS = 255


class Section(NamedTuple):
    offset: int
    size: int

    @property
    def end(self):
        return self.offset + self.size


class FileHeader(NamedTuple):
    """The header's fields; ``features`` is the set of feature bits."""

    magic: bytes
    size: int
    attr_size: int
    attrs: Section
    data: Section
    event_types: Section
    features: frozenset

    def pack(self):
        bitmap = sum(1 << bit for bit in self.features).to_bytes(FEATURE_BITS // 8, "little")
        return FILE_HEADER.pack(
            self.magic, self.size, self.attr_size, *self.attrs, *self.data, *self.event_types, bitmap
        )

    @classmethod
    def unpack(cls, data):
        magic, size, attr_size, *sections, bitmap = FILE_HEADER.unpack_from(data)
        bits = int.from_bytes(bitmap, "little")
        features = frozenset(bit for bit in range(FEATURE_BITS) if bits >> bit & 1)
        attrs, data_section, event_types = (Section(*sections[k : k + 2]) for k in (0, 2, 4))
        return cls(magic, size, attr_size, attrs, data_section, event_types, features)


def pack_string(text):
    """A ``perf_header_string``: u32 length, then the string NUL-terminated and padded to 8 bytes."""
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 8)
    return struct.pack("<I", len(raw)) + raw


def unpack_string(data, offset=0):
    """``(text, offset after it)`` of the ``perf_header_string`` at ``offset``; ValueError when it overruns."""
    if offset + 4 > len(data):
        raise ValueError("a string's length runs past its section")
    (length,) = struct.unpack_from("<I", data, offset)
    end = offset + 4 + length
    if end > len(data):
        raise ValueError(f"a string of {length} bytes runs past its section")
    return bytes(data[offset + 4 : end]).split(b"\0", 1)[0].decode(errors="replace"), end


# HEADER_BUILD_ID: a sequence of build_id_event records (a perf_event_header, then these fields).
BUILD_ID_EVENT = struct.Struct("<IHHi20sBxxx")  # header, pid, build id, its size (with misc bit 15), padding
BUILD_ID_SIZE_GIVEN = 1 << 15  # PERF_RECORD_MISC_BUILD_ID_SIZE: the byte after the id says its length
KERNEL_MISC = 1  # PERF_RECORD_MISC_KERNEL
USER_MISC = 2  # PERF_RECORD_MISC_USER


class BuildIdRecord(NamedTuple):
    pid: int
    build_id: str  # hex
    filename: str


def pack_build_ids(records):
    """The HEADER_BUILD_ID feature: one build_id_event per record, file names padded to 64 bytes as perf does."""
    out = bytearray()
    for record in records:
        raw = bytes.fromhex(record.build_id)
        name = record.filename.encode() + b"\0"
        name += b"\0" * (-len(name) % 64)
        size = BUILD_ID_EVENT.size + len(name)
        misc = USER_MISC | BUILD_ID_SIZE_GIVEN
        out += BUILD_ID_EVENT.pack(0, misc, size, record.pid, raw.ljust(20, b"\0"), len(raw)) + name
    return bytes(out)


def unpack_build_ids(data):
    """The BuildIdRecords of a HEADER_BUILD_ID feature; ValueError when a record overruns it."""
    records, offset = [], 0
    while offset + BUILD_ID_EVENT.size <= len(data):
        _, misc, size, pid, raw, given = BUILD_ID_EVENT.unpack_from(data, offset)
        if size < BUILD_ID_EVENT.size or offset + size > len(data):
            raise ValueError(f"a build-id entry of {size} bytes at byte {offset} runs past its section")
        length = given if misc & BUILD_ID_SIZE_GIVEN and 0 < given <= 20 else 20
        if not misc & BUILD_ID_SIZE_GIVEN:
            raw = raw.rstrip(b"\0") or raw  # old perf: 20 bytes, a shorter id zero-padded
            length = len(raw)
        name = bytes(data[offset + BUILD_ID_EVENT.size : offset + size]).split(b"\0", 1)[0]
        records.append(BuildIdRecord(pid, raw[:length].hex(), name.decode(errors="replace")))
        offset += size
    return records
