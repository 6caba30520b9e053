"""Reading a per-cpu context switch trace: which thread ran on the cpu, and when.

A per-cpu bundle (``cpus[].contextSwitchTrace``) holds, for each cpu, the raw
records of a perf_event_open software event opened with ``context_switch = 1``,
``sample_id_all = 1`` and ``sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME``,
exactly as the kernel wrote them into the event's data buffer.  That is what
native LLDB collects and saves.  :mod:`lldb_trace.perf.records` walks these
records and reads their layout; this module says what they mean.  Other record
types (``PERF_RECORD_LOST``, ``THROTTLE``...) are skipped, and counted when
they say records were lost.

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
  record type no kernel writes, a switch record shorter than its 32 bytes,
  or time going backwards) raises :class:`ContextSwitchTraceError`, one line
  naming the file, the cpu, the byte offset and what is wrong.  Guessing past a bad size would misattribute
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

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import NoReturn

from ..bundle.model import TscConversion
from ..errors import LldbTraceError
from ..perf import (
    LOSS_RECORD_TYPES,
    PERF_RECORD_SWITCH_CPU_WIDE,
    PerfRecordError,
    unpack_switch_record,
    walk_records,
)

U64_MAX = (1 << 64) - 1


class ContextSwitchTraceError(LldbTraceError):
    """A context switch trace file is damaged; the message names the file and byte offset."""


def perf_time_to_tsc(conversion: TscConversion, ns: int) -> int:
    """The TSC value of perf time ``ns`` (the inverse of ``conversion.to_ns``, in unsigned 64-bit arithmetic).

    ``conversion`` is a :class:`~lldb_trace.bundle.model.TscConversion`.  The
    result is rounded down, so ``to_ns(perf_time_to_tsc(ns)) <= ns``.
    """
    if conversion.time_mult <= 0:
        raise ContextSwitchTraceError(f"tscPerfZeroConversion.timeMult is {conversion.time_mult}: it must be positive")
    if not 0 <= conversion.time_shift < 64:
        raise ContextSwitchTraceError(f"tscPerfZeroConversion.timeShift is {conversion.time_shift}: it must be 0 to 63")
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
    def switched_in(self) -> bool:
        """True when the switch in was recorded (the start is exact)."""
        return self.variant in (Variant.COMPLETE, Variant.ONLY_START, Variant.HINTED_END)

    @property
    def switched_out(self) -> bool:
        """True when the switch out was recorded (the end is exact)."""
        return self.variant in (Variant.COMPLETE, Variant.ONLY_END, Variant.HINTED_START)

    @property
    def lowest_known_tsc(self) -> int:
        """The earliest time the trace vouches for: the start when recorded, else the end."""
        return self.start_tsc if self.switched_in else self.end_tsc

    def contains(self, tsc: int) -> bool:
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


def read_context_switches(path: str | Path, cpu: int, conversion: TscConversion) -> ContextSwitchTrace:
    """Parse the context switch trace file of ``cpu`` (see :func:`parse_context_switches`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ContextSwitchTraceError(f"{path}: cannot read the context switch trace: {error.strerror}") from None
    return parse_context_switches(data, cpu, conversion, source=str(path))


def parse_context_switches(
    data: bytes, cpu: int, conversion: TscConversion, source: str = "context switch trace"
) -> ContextSwitchTrace:
    """Parse raw perf records into a :class:`ContextSwitchTrace`; raises ContextSwitchTraceError on damage."""
    records, loss_records, end = [], 0, 0
    previous_ns = None

    def fail(at: int, reason: str) -> NoReturn:
        message = f"{source}: cpu {cpu}: bad context switch record at offset {at}: {reason}"
        raise ContextSwitchTraceError(message) from None

    try:
        for header in walk_records(data):
            if header.type == PERF_RECORD_SWITCH_CPU_WIDE:
                switch = unpack_switch_record(data, header)
                if previous_ns is not None and switch.time_ns < previous_ns:
                    fail(
                        header.offset, f"time goes backwards ({switch.time_ns} ns, after a record at {previous_ns} ns)"
                    )
                previous_ns = switch.time_ns
                tsc = perf_time_to_tsc(conversion, switch.time_ns)
                records.append(SwitchRecord(offset=header.offset, tsc=tsc, **switch._asdict()))
            elif header.type in LOSS_RECORD_TYPES:
                loss_records += 1
            end = header.offset + header.size
    except PerfRecordError as error:
        fail(error.offset, error.reason)
    return ContextSwitchTrace(
        cpu=cpu,
        source=source,
        records=tuple(records),
        executions=tuple(executions_from_records(records, cpu)),
        loss_records=loss_records,
        ignored_tail=len(data) - end,
    )


def executions_from_records(records: Sequence[SwitchRecord], cpu: int) -> list[Execution]:
    """The executions that consecutive switch records of one cpu describe, in the order they end."""
    executions = []
    previous: SwitchRecord | None = None
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


def _hinted_end(switched_in: SwitchRecord, next_record: SwitchRecord, cpu: int) -> Execution:
    end = max(next_record.tsc - 1, switched_in.tsc)
    return Execution(switched_in.tid, switched_in.pid, cpu, switched_in.tsc, end, Variant.HINTED_END)


def _hinted_start(previous: SwitchRecord, switched_out: SwitchRecord, cpu: int) -> Execution:
    start = min(previous.tsc + 1, switched_out.tsc)
    return Execution(switched_out.tid, switched_out.pid, cpu, start, switched_out.tsc, Variant.HINTED_START)
