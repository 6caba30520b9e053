"""Reading a per-cpu context switch trace: which thread ran on the cpu, and when.

A per-cpu bundle (``cpus[].contextSwitchTrace``) holds, for each cpu, the raw
records of a perf_event_open software event opened with ``context_switch = 1``,
``sample_id_all = 1`` and ``sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME``,
exactly as the kernel wrote them into the event's data buffer.  That is what
native LLDB collects and saves.  With that configuration each
``PERF_RECORD_SWITCH_CPU_WIDE`` record is 32 little-endian bytes:

====== ==== ========================================================
offset size field
====== ==== ========================================================
0      4    ``type`` (15: PERF_RECORD_SWITCH_CPU_WIDE)
4      2    ``misc`` (bit 13, PERF_RECORD_MISC_SWITCH_OUT: a switch out;
            bit 14: the task was preempted)
6      2    ``size`` (of the whole record, header included)
8      4    ``next_prev_pid``: the task switched to (out) or from (in)
12     4    ``next_prev_tid``
16     4    ``pid`` of the task switched in or out (sample_id: TID)
20     4    ``tid``
24     8    ``time``: perf clock nanoseconds (sample_id: TIME)
====== ==== ========================================================

pid 0 / tid 0 is the idle task.  Other record types may be mixed in
(``PERF_RECORD_LOST``, ``THROTTLE``...); they are skipped by their ``size``
and counted when they say records were lost.

Times are turned into TSC values with the bundle's ``tscPerfZeroConversion``
(the inverse of ``TscConversion.to_ns``, in the kernel's 64-bit arithmetic),
so they compare directly with the TSC packets of the cpu's Intel PT trace.

Consecutive records become *executions*: stretches of time one thread ran on
the cpu.  Following native LLDB (``PerfContextSwitchDecoder``), a missing
switch is not an error but a weaker execution:

- in(A) then out(A): ``COMPLETE``, from the in to the out;
- in(A) then in(B): A's out was not recorded: ``HINTED_END``, A ran from its
  in until just before B's in (``end = B.in - 1``);
- out(A) then out(B): B's in was not recorded: ``HINTED_START``, B ran from
  just after A's out (``start = A.out + 1``) to its own out;
- in(A) then out(B), B != A: both of the above (A hinted end, B hinted start);
- out(A) as the first record: ``ONLY_END`` (start 0: since tracing began);
- in(A) as the last record: ``ONLY_START`` (end 2**64-1: until tracing ended).

Decisions, for a debugger user:

- A damaged file (a record size of 0 or under 8 bytes, over 8000 bytes, a
  record type no kernel writes, a switch record shorter than the 32 bytes of
  the layout above, or time going backwards) raises
  :class:`ContextSwitchTraceError`, one line naming the file, the cpu, the
  byte offset and what is wrong.  Guessing past a bad size would misattribute
  instructions between threads silently; a clear error is better.
- A file that ends inside a record (a truncated copy, a buffer cut at a page)
  is not an error: the incomplete trailing record is skipped and its size is
  kept in ``ignored_tail``.  At worst the last switch is lost, and the
  execution it closed becomes ``ONLY_START`` (open-ended), which is what a
  trace that stopped a moment earlier would have given.
- Two records at the same time are accepted (native LLDB rejects them); a
  switch out and the next switch in can share a nanosecond.  Only time going
  backwards is an error.
"""

import struct
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..errors import LldbTraceError

PERF_RECORD_LOST = 2
PERF_RECORD_THROTTLE = 5
PERF_RECORD_UNTHROTTLE = 6
PERF_RECORD_LOST_SAMPLES = 13
PERF_RECORD_SWITCH_CPU_WIDE = 15
PERF_RECORD_MISC_SWITCH_OUT = 1 << 13
PERF_RECORD_MISC_SWITCH_OUT_PREEMPT = 1 << 14

HEADER = struct.Struct("<IHH")
SWITCH_RECORD = struct.Struct("<IHHIIIIQ")  # header, next_prev_pid/tid, pid/tid, time
LOST_RECORD = struct.Struct("<IHHQQIIQ")  # header, id, lost, pid/tid, time
SWITCH_RECORD_SIZE = SWITCH_RECORD.size  # 32
MAX_RECORD_SIZE = 8000  # perf records are small; a bigger size means the bytes are not records
_MAX_TYPE = 119  # as native LLDB: kernels define about 20 types; leave room for new ones, reject garbage
_LOSS_TYPES = (PERF_RECORD_LOST, PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE, PERF_RECORD_LOST_SAMPLES)

U64_MAX = (1 << 64) - 1


class ContextSwitchTraceError(LldbTraceError):
    """A context switch trace file is damaged; the message names the file and byte offset."""


def perf_time_to_tsc(conversion, ns):
    """The TSC value of perf time ``ns`` (the inverse of ``conversion.to_ns``, in unsigned 64-bit arithmetic).

    ``conversion`` is a :class:`~lldb_trace.bundle.model.TscConversion`.  The
    result is rounded down, so ``to_ns(perf_time_to_tsc(ns)) <= ns``.
    """
    if conversion.time_mult <= 0:
        raise ContextSwitchTraceError(f"tscPerfZeroConversion.timeMult is {conversion.time_mult}: it must be positive")
    elapsed = (ns - conversion.time_zero) & U64_MAX
    quotient, remainder = divmod(elapsed, conversion.time_mult)
    shift = conversion.time_shift
    return ((quotient << shift) + (remainder << shift) // conversion.time_mult) & U64_MAX


@dataclass(frozen=True)
class SwitchRecord:
    """One ``PERF_RECORD_SWITCH_CPU_WIDE`` record; ``tsc`` is its time converted to TSC."""

    offset: int
    is_out: bool
    pid: int
    tid: int
    next_prev_pid: int
    next_prev_tid: int
    time_ns: int
    tsc: int
    preempted: bool = False


class Variant(Enum):
    """How much of an execution the context switch trace saw (see the module docstring)."""

    COMPLETE = "complete"
    ONLY_START = "only start"
    ONLY_END = "only end"
    HINTED_START = "hinted start"
    HINTED_END = "hinted end"


@dataclass(frozen=True)
class Execution:
    """A stretch of time ``tid`` ran on ``cpu``: from ``start_tsc`` to ``end_tsc``.

    ``start_tsc`` is 0 for ``ONLY_END`` and ``end_tsc`` is 2**64-1 for
    ``ONLY_START``: the unknown side is open.  For the hinted variants the
    unknown side is the neighbouring record's time, one tick away.
    """

    tid: int
    pid: int
    cpu: int
    start_tsc: int
    end_tsc: int
    variant: Variant

    @property
    def switched_in(self):
        """True when the switch in was recorded (the start is exact)."""
        return self.variant in (Variant.COMPLETE, Variant.ONLY_START, Variant.HINTED_END)

    @property
    def switched_out(self):
        """True when the switch out was recorded (the end is exact)."""
        return self.variant in (Variant.COMPLETE, Variant.ONLY_END, Variant.HINTED_START)

    @property
    def lowest_known_tsc(self):
        """The earliest time the trace vouches for: the start when recorded, else the end."""
        return self.start_tsc if self.switched_in else self.end_tsc

    def contains(self, tsc):
        """True when ``tsc`` falls strictly inside the execution (as native LLDB attributes PSBs)."""
        return self.start_tsc < tsc < self.end_tsc


@dataclass(frozen=True)
class ContextSwitchTrace:
    """A parsed context switch trace of one cpu."""

    cpu: int
    source: str
    records: tuple[SwitchRecord, ...]
    executions: tuple[Execution, ...]
    loss_records: int = 0  # PERF_RECORD_LOST and friends: switches may be missing around them
    ignored_tail: int = 0  # bytes of an incomplete record at the end of the file, skipped

    def executions_of(self, tid):
        return [execution for execution in self.executions if execution.tid == tid]


def read_context_switches(path, cpu, conversion):
    """Parse the context switch trace file of ``cpu`` (see :func:`parse_context_switches`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ContextSwitchTraceError(f"{path}: cannot read the context switch trace: {error.strerror}") from None
    return parse_context_switches(data, cpu, conversion, source=str(path))


def parse_context_switches(data, cpu, conversion, source="context switch trace"):
    """Parse raw perf records into a :class:`ContextSwitchTrace`; raises ContextSwitchTraceError on damage."""
    records, loss_records, offset = [], 0, 0
    size_total = len(data)
    previous_ns = None

    def fail(at, reason):
        raise ContextSwitchTraceError(f"{source}: cpu {cpu}: bad context switch record at offset {at}: {reason}")

    while offset < size_total:
        if size_total - offset < HEADER.size:
            break  # not even a header left: an incomplete trailing record
        kind, misc, size = HEADER.unpack_from(data, offset)
        if size < HEADER.size:
            fail(offset, f"its size is {size} bytes, less than a perf record header")
        if size > MAX_RECORD_SIZE:
            fail(offset, f"its size is {size} bytes; perf records are at most {MAX_RECORD_SIZE}")
        if kind >= _MAX_TYPE:
            fail(offset, f"record type {kind} is not a perf record type")
        if offset + size > size_total:
            break  # the file ends inside this record
        if kind == PERF_RECORD_SWITCH_CPU_WIDE:
            if size < SWITCH_RECORD_SIZE:
                fail(
                    offset,
                    f"a switch record of {size} bytes; it needs {SWITCH_RECORD_SIZE} "
                    "(sample_id_all with sample_type PERF_SAMPLE_TID | PERF_SAMPLE_TIME)",
                )
            _, _, _, next_prev_pid, next_prev_tid, pid, tid, time_ns = SWITCH_RECORD.unpack_from(data, offset)
            if previous_ns is not None and time_ns < previous_ns:
                fail(offset, f"time goes backwards ({time_ns} ns, after a record at {previous_ns} ns)")
            previous_ns = time_ns
            records.append(
                SwitchRecord(
                    offset=offset,
                    is_out=bool(misc & PERF_RECORD_MISC_SWITCH_OUT),
                    pid=pid,
                    tid=tid,
                    next_prev_pid=next_prev_pid,
                    next_prev_tid=next_prev_tid,
                    time_ns=time_ns,
                    tsc=perf_time_to_tsc(conversion, time_ns),
                    preempted=bool(misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT),
                )
            )
        elif kind in _LOSS_TYPES:
            loss_records += 1
        offset += size
    return ContextSwitchTrace(
        cpu=cpu,
        source=source,
        records=tuple(records),
        executions=tuple(executions_from_records(records, cpu)),
        loss_records=loss_records,
        ignored_tail=size_total - offset,
    )


def executions_from_records(records, cpu):
    """The executions that consecutive switch records of one cpu describe, in the order they end."""
    executions = []
    previous = None
    for record in records:
        if previous is None:
            if record.is_out:
                executions.append(Execution(record.tid, record.pid, cpu, 0, record.tsc, Variant.ONLY_END))
        elif not previous.is_out and not record.is_out:
            executions.append(_hinted_end(previous, record, cpu))
        elif previous.is_out and record.is_out:
            executions.append(_hinted_start(previous, record, cpu))
        elif not previous.is_out and record.is_out:
            if (previous.pid, previous.tid) == (record.pid, record.tid):
                executions.append(Execution(record.tid, record.pid, cpu, previous.tsc, record.tsc, Variant.COMPLETE))
            else:
                executions.append(_hinted_end(previous, record, cpu))
                executions.append(_hinted_start(previous, record, cpu))
        # an out followed by an in is the normal gap between two executions
        previous = record
    if previous is not None and not previous.is_out:
        executions.append(Execution(previous.tid, previous.pid, cpu, previous.tsc, U64_MAX, Variant.ONLY_START))
    return executions


def _hinted_end(switched_in, next_record, cpu):
    end = max(next_record.tsc - 1, switched_in.tsc)
    return Execution(switched_in.tid, switched_in.pid, cpu, switched_in.tsc, end, Variant.HINTED_END)


def _hinted_start(previous, switched_out, cpu):
    start = min(previous.tsc + 1, switched_out.tsc)
    return Execution(switched_out.tid, switched_out.pid, cpu, start, switched_out.tsc, Variant.HINTED_START)


# Writing records (for tests and for making per-cpu bundles from per-thread recordings).


def pack_switch_record(is_out, pid, tid, next_prev_pid, next_prev_tid, time_ns, preempted=False):
    """One 32-byte PERF_RECORD_SWITCH_CPU_WIDE record, as the kernel writes it for LLDB's event."""
    misc = (PERF_RECORD_MISC_SWITCH_OUT if is_out else 0) | (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT if preempted else 0)
    return SWITCH_RECORD.pack(
        PERF_RECORD_SWITCH_CPU_WIDE, misc, SWITCH_RECORD_SIZE, next_prev_pid, next_prev_tid, pid, tid, time_ns
    )


def pack_lost_record(lost, time_ns, event_id=0, pid=0, tid=0):
    """A PERF_RECORD_LOST record (``lost`` records were dropped), with the same sample_id fields."""
    return LOST_RECORD.pack(PERF_RECORD_LOST, 0, LOST_RECORD.size, event_id, lost, pid, tid, time_ns)
