"""perf records: what the kernel writes into an event's data area, and what a perf.data file holds.

Every record starts with ``struct perf_event_header``: ``type`` (u32, a
``PERF_RECORD_*``), ``misc`` (u16 flags) and ``size`` (u16, of the whole
record, header included), little-endian.  With ``sample_id_all`` set, a
record other than a sample ends with the event's *sample_id* fields, in the
order of its ``sample_type`` bits.  Native LLDB opens its context switch
events with ``sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME``, so their
sample_id is pid and tid (u32 each) and time (u64, perf clock nanoseconds),
and each ``PERF_RECORD_SWITCH_CPU_WIDE`` record is 32 bytes:

====== ==== ========================================================
offset size field
====== ==== ========================================================
0      4    ``type`` (15: PERF_RECORD_SWITCH_CPU_WIDE)
4      2    ``misc`` (bit 13, PERF_RECORD_MISC_SWITCH_OUT: a switch out;
            bit 14: the task was preempted)
6      2    ``size`` (32)
8      4    ``next_prev_pid``: the task switched to (out) or from (in)
12     4    ``next_prev_tid``
16     4    ``pid`` of the task switched in or out (sample_id: TID)
20     4    ``tid``
24     8    ``time`` (sample_id: TIME)
====== ==== ========================================================

pid 0 / tid 0 is the idle task.

:func:`walk_records` steps from header to header.  Bytes that cannot be
records (a size under 8 or over 8000 bytes, a type no kernel writes) raise
:class:`PerfRecordError` with the offset, so a reader can say where its file
is damaged instead of guessing past a bad size.  A record the bytes end inside
is not walked: a buffer copy or a file may stop anywhere.
"""

import struct
from typing import NamedTuple

from ..errors import LldbTraceError

PERF_RECORD_LOST = 2
PERF_RECORD_THROTTLE = 5
PERF_RECORD_UNTHROTTLE = 6
PERF_RECORD_LOST_SAMPLES = 13
PERF_RECORD_SWITCH_CPU_WIDE = 15
PERF_RECORD_MISC_SWITCH_OUT = 1 << 13
PERF_RECORD_MISC_SWITCH_OUT_PREEMPT = 1 << 14
# Records saying that others are missing around them (dropped, or not made while throttled).
LOSS_RECORD_TYPES = frozenset(
    (PERF_RECORD_LOST, PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE, PERF_RECORD_LOST_SAMPLES)
)

HEADER = struct.Struct("<IHH")  # struct perf_event_header: type, misc, size
_SAMPLE_ID_TID_TIME = "IIQ"  # sample_id with PERF_SAMPLE_TID | PERF_SAMPLE_TIME: pid, tid, time
SWITCH_RECORD = struct.Struct(HEADER.format + "II" + _SAMPLE_ID_TID_TIME)  # next_prev_pid/tid
LOST_RECORD = struct.Struct(HEADER.format + "QQ" + _SAMPLE_ID_TID_TIME)  # id, lost
SWITCH_RECORD_SIZE = SWITCH_RECORD.size  # 32
MAX_RECORD_SIZE = 8000  # perf records are small; a bigger size means the bytes are not records
_MAX_TYPE = 119  # as native LLDB: kernels define about 20 types; leave room for new ones, reject garbage


class PerfRecordError(LldbTraceError):
    """Bytes that should be perf records are not; ``offset`` says where and ``reason`` what is wrong."""

    def __init__(self, offset, reason):
        super().__init__(f"bad perf record at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


class RecordHeader(NamedTuple):
    """A record's header, and where the record starts in the bytes walked."""

    offset: int
    type: int
    misc: int
    size: int


class SwitchCpuWide(NamedTuple):
    """The fields of a ``PERF_RECORD_SWITCH_CPU_WIDE`` record with a TID and TIME sample_id."""

    is_out: bool
    preempted: bool
    pid: int
    tid: int
    next_prev_pid: int
    next_prev_tid: int
    time_ns: int


def walk_records(data):
    """Yield the :class:`RecordHeader` of every whole record in ``data``; PerfRecordError where records end.

    The walk stops before a trailing record the bytes end inside: the last
    header's ``offset + size`` tells where the whole records end.
    """
    offset, total = 0, len(data)
    while total - offset >= HEADER.size:
        kind, misc, size = HEADER.unpack_from(data, offset)
        if size < HEADER.size:
            raise PerfRecordError(offset, f"its size is {size} bytes, less than a perf record header")
        if size > MAX_RECORD_SIZE:
            raise PerfRecordError(offset, f"its size is {size} bytes; perf records are at most {MAX_RECORD_SIZE}")
        if kind >= _MAX_TYPE:
            raise PerfRecordError(offset, f"record type {kind} is not a perf record type")
        if offset + size > total:
            return
        yield RecordHeader(offset, kind, misc, size)
        offset += size


def unpack_switch_record(data, header):
    """The :class:`SwitchCpuWide` at ``header``; PerfRecordError when it is too short for a TID and TIME."""
    if header.size < SWITCH_RECORD_SIZE:
        raise PerfRecordError(
            header.offset,
            f"a switch record of {header.size} bytes; it needs {SWITCH_RECORD_SIZE} "
            "(sample_id_all with sample_type PERF_SAMPLE_TID | PERF_SAMPLE_TIME)",
        )
    _, misc, _, next_prev_pid, next_prev_tid, pid, tid, time_ns = SWITCH_RECORD.unpack_from(data, header.offset)
    return SwitchCpuWide(
        is_out=bool(misc & PERF_RECORD_MISC_SWITCH_OUT),
        preempted=bool(misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT),
        pid=pid,
        tid=tid,
        next_prev_pid=next_prev_pid,
        next_prev_tid=next_prev_tid,
        time_ns=time_ns,
    )


# Writing records, as the kernel does (for tests and for making per-cpu bundles from per-thread recordings).


def pack_switch_record(is_out, pid, tid, next_prev_pid, next_prev_tid, time_ns, preempted=False):
    """One 32-byte PERF_RECORD_SWITCH_CPU_WIDE record, as the kernel writes it for LLDB's event."""
    misc = (PERF_RECORD_MISC_SWITCH_OUT if is_out else 0) | (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT if preempted else 0)
    return SWITCH_RECORD.pack(
        PERF_RECORD_SWITCH_CPU_WIDE, misc, SWITCH_RECORD_SIZE, next_prev_pid, next_prev_tid, pid, tid, time_ns
    )


def pack_lost_record(lost, time_ns, event_id=0, pid=0, tid=0):
    """A PERF_RECORD_LOST record (``lost`` records were dropped), with the same sample_id fields."""
    return LOST_RECORD.pack(PERF_RECORD_LOST, 0, LOST_RECORD.size, event_id, lost, pid, tid, time_ns)
