"""The records that say what ran where: tasks, mappings, and the AUX area's notices (<linux/perf_event.h>).

Each layout is the record's fixed part after its 8-byte header; a name
(COMM, MMAP, MMAP2) follows, NUL-terminated and padded to 8 bytes, and then,
with ``sample_id_all``, the event's *sample_id* (:class:`SampleId`).

- ``PERF_RECORD_MMAP`` (1): pid, tid, addr, len, pgoff, filename;
- ``PERF_RECORD_COMM`` (3): pid, tid, comm (misc bit 13: the name came from exec);
- ``PERF_RECORD_EXIT`` (4) / ``FORK`` (7): pid, ppid, tid, ptid, time;
- ``PERF_RECORD_MMAP2`` (10): pid, tid, addr, len, pgoff, maj, min, ino,
  ino_generation (or, with misc bit 14, a build-id's size and 20 bytes), prot,
  flags, filename;
- ``PERF_RECORD_AUX`` (11): aux_offset, aux_size, flags: where new trace data
  landed in the AUX area, and whether some was lost (TRUNCATED, PARTIAL);
- ``PERF_RECORD_ITRACE_START`` (12): pid, tid: the task whose trace starts;
- ``PERF_RECORD_SWITCH`` (14): a context switch of the traced task itself (misc bit 13: out).
"""

import struct
from typing import NamedTuple

PERF_RECORD_MMAP = 1
PERF_RECORD_COMM = 3
PERF_RECORD_EXIT = 4
PERF_RECORD_FORK = 7
PERF_RECORD_SAMPLE = 9
PERF_RECORD_MMAP2 = 10
PERF_RECORD_AUX = 11
PERF_RECORD_ITRACE_START = 12
PERF_RECORD_SWITCH = 14

PERF_RECORD_MISC_MMAP_DATA = 1 << 13  # a data mapping, not code
PERF_RECORD_MISC_COMM_EXEC = 1 << 13
PERF_RECORD_MISC_MMAP_BUILD_ID = 1 << 14

PERF_AUX_FLAG_TRUNCATED = 0x01  # the AUX area filled up: trace data after this record's was lost
PERF_AUX_FLAG_OVERWRITE = 0x02  # snapshot mode: the area is a ring overwritten in place
PERF_AUX_FLAG_PARTIAL = 0x04  # the record's data has holes
PERF_AUX_FLAG_COLLISION = 0x08  # sample collided with another

PROT_EXEC = 4

# sample_type bits that make up a sample_id, in the order its fields come
PERF_SAMPLE_TID = 1 << 1
PERF_SAMPLE_TIME = 1 << 2
PERF_SAMPLE_ID = 1 << 6
PERF_SAMPLE_CPU = 1 << 7
PERF_SAMPLE_STREAM_ID = 1 << 9
PERF_SAMPLE_IDENTIFIER = 1 << 16

TASK_IDS = struct.Struct("<II")  # COMM, ITRACE_START: pid, tid
MMAP = struct.Struct("<IIQQQ")  # pid, tid, addr, len, pgoff
MMAP2 = struct.Struct("<IIQQQ24sII")  # ... then inode or build-id (24 bytes), prot, flags
FORK_EXIT = struct.Struct("<IIIIQ")  # pid, ppid, tid, ptid, time
AUX = struct.Struct("<QQQ")  # aux_offset, aux_size, flags
_HEADER = struct.Struct("<IHH")
UNKNOWN_ID = 0xFFFFFFFF  # a u32 pid/tid/cpu of -1


class SampleId(NamedTuple):
    """The sample_id fields of a record (None where the event's sample_type has none)."""

    pid: int | None = None
    tid: int | None = None
    time: int | None = None
    id: int | None = None
    cpu: int | None = None


class SampleIdLayout:
    """Reads and writes the sample_id of an event's records, from its ``sample_type``."""

    def __init__(self, sample_type):
        self.sample_type = sample_type
        fields = ""
        if sample_type & PERF_SAMPLE_TID:
            fields += "II"
        if sample_type & PERF_SAMPLE_TIME:
            fields += "Q"
        if sample_type & PERF_SAMPLE_ID:
            fields += "Q"
        if sample_type & PERF_SAMPLE_STREAM_ID:
            fields += "Q"
        if sample_type & PERF_SAMPLE_CPU:
            fields += "II"
        if sample_type & PERF_SAMPLE_IDENTIFIER:
            fields += "Q"
        self.struct = struct.Struct("<" + fields)
        self.size = self.struct.size

    def unpack(self, data, record_end):
        """The sample_id ending at ``record_end``; None when the record is too short for it."""
        start = record_end - self.size
        if start < 0:
            return None
        values = list(self.struct.unpack_from(data, start))
        fields = {}
        if self.sample_type & PERF_SAMPLE_TID:
            fields["pid"], fields["tid"] = values.pop(0), values.pop(0)
        if self.sample_type & PERF_SAMPLE_TIME:
            fields["time"] = values.pop(0)
        if self.sample_type & PERF_SAMPLE_ID:
            fields["id"] = values.pop(0)
        if self.sample_type & PERF_SAMPLE_STREAM_ID:
            values.pop(0)
        if self.sample_type & PERF_SAMPLE_CPU:
            fields["cpu"] = values.pop(0)
            values.pop(0)
        if self.sample_type & PERF_SAMPLE_IDENTIFIER:
            fields["id"] = values.pop(0)
        return SampleId(**fields)

    def pack(self, sample_id):
        values = []
        if self.sample_type & PERF_SAMPLE_TID:
            values += [sample_id.pid or 0, sample_id.tid or 0]
        if self.sample_type & PERF_SAMPLE_TIME:
            values.append(sample_id.time or 0)
        if self.sample_type & PERF_SAMPLE_ID:
            values.append(sample_id.id or 0)
        if self.sample_type & PERF_SAMPLE_STREAM_ID:
            values.append(sample_id.id or 0)
        if self.sample_type & PERF_SAMPLE_CPU:
            values += [sample_id.cpu or 0, 0]
        if self.sample_type & PERF_SAMPLE_IDENTIFIER:
            values.append(sample_id.id or 0)
        return self.struct.pack(*values)


def name_bytes(name):
    """A record's name: NUL-terminated, padded to 8 bytes."""
    raw = name.encode() + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


def read_name(data, start, end):
    return bytes(data[start:end]).split(b"\0", 1)[0].decode(errors="replace")


def pack_record(kind, body, misc=0):
    """A record of type ``kind``: its header, then ``body`` (fixed fields, name, sample_id)."""
    return _HEADER.pack(kind, misc, _HEADER.size + len(body)) + body


class Mmap(NamedTuple):
    """An MMAP or MMAP2 record: ``filename`` mapped at ``addr`` for ``length`` bytes from file offset ``pgoff``."""

    pid: int
    tid: int
    addr: int
    length: int
    pgoff: int
    filename: str
    executable: bool
    build_id: str | None = None


def unpack_mmap(data, header, id_size):
    """The Mmap of an MMAP or MMAP2 record at ``header``; ValueError when it is too short."""
    body = header.offset + _HEADER.size
    end = header.offset + header.size - id_size
    if header.type == PERF_RECORD_MMAP:
        if body + MMAP.size > end:
            raise ValueError("an MMAP record too short for its fields")
        pid, tid, addr, length, pgoff = MMAP.unpack_from(data, body)
        name = read_name(data, body + MMAP.size, end)
        return Mmap(pid, tid, addr, length, pgoff, name, not header.misc & PERF_RECORD_MISC_MMAP_DATA)
    if body + MMAP2.size > end:
        raise ValueError("an MMAP2 record too short for its fields")
    pid, tid, addr, length, pgoff, inode, prot, _flags = MMAP2.unpack_from(data, body)
    build_id = None
    if header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID and 0 < inode[0] <= 20:
        build_id = inode[4 : 4 + inode[0]].hex()
    name = read_name(data, body + MMAP2.size, end)
    return Mmap(pid, tid, addr, length, pgoff, name, bool(prot & PROT_EXEC), build_id)


def pack_mmap2(pid, tid, addr, length, pgoff, filename, sample_id=b"", build_id=None, prot=PROT_EXEC | 1):
    """An MMAP2 record of an executable mapping (with its build-id when given, as perf record --buildid-mmap)."""
    misc = 2  # PERF_RECORD_MISC_USER
    inode = bytes(24)
    if build_id:
        raw = bytes.fromhex(build_id)
        inode = bytes([len(raw), 0, 0, 0]) + raw.ljust(20, b"\0")
        misc |= PERF_RECORD_MISC_MMAP_BUILD_ID
    body = MMAP2.pack(pid, tid, addr, length, pgoff, inode, prot, 2) + name_bytes(filename) + sample_id  # MAP_PRIVATE
    return pack_record(PERF_RECORD_MMAP2, body, misc)
