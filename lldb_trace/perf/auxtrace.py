"""The records perf itself adds to a perf.data for AUX area traces (perf.data-file-format.txt).

- ``PERF_RECORD_AUXTRACE_INFO`` (70): u32 type (1: Intel PT), u32 padding,
  then u64 ``priv`` words; for Intel PT their order is :class:`IntelPtInfo`'s
  fields (tools/perf/util/intel-pt.h), optionally followed by a filter string.
- ``PERF_RECORD_AUXTRACE`` (71): size, offset, reference (u64), idx, tid, cpu,
  padding (u32): ``size`` bytes of raw trace follow the 48-byte record and are
  *not* counted in its header's size.  ``offset`` is where the bytes lie in
  their AUX area's stream, ``idx`` which mmap (a thread, or a cpu) they came
  from; tid and cpu are -1 where unknown.
- ``PERF_RECORD_TIME_CONV`` (79): time_shift, time_mult, time_zero, and on
  newer perf time_cycles, time_mask and two flags.
- ``PERF_RECORD_FINISHED_ROUND`` (68): no record is reordered across it.
"""

import struct
from dataclasses import astuple, dataclass

PERF_RECORD_HEADER_ATTR = 64
PERF_RECORD_FINISHED_ROUND = 68
PERF_RECORD_ID_INDEX = 69
PERF_RECORD_AUXTRACE_INFO = 70
PERF_RECORD_AUXTRACE = 71
PERF_RECORD_AUXTRACE_ERROR = 72
PERF_RECORD_TIME_CONV = 79
PERF_RECORD_HEADER_FEATURE = 80

PERF_AUXTRACE_INTEL_PT = 1
AUXTRACE_NAMES = {1: "Intel PT", 2: "Intel BTS", 3: "CoreSight ETM", 4: "Arm SPE", 5: "S390 CPUMSF", 6: "HiSilicon PTT"}

AUXTRACE_INFO = struct.Struct("<IHHII")  # header, type, padding
AUXTRACE = struct.Struct("<IHHQQQIIII")  # header, size, offset, reference, idx, tid, cpu, padding
TIME_CONV = struct.Struct("<IHHQQQ")  # header, time_shift, time_mult, time_zero
_HEADER = struct.Struct("<IHH")
NO_CPU = 0xFFFFFFFF


@dataclass(frozen=True)
class IntelPtInfo:
    """The Intel PT ``priv`` words of AUXTRACE_INFO, in their order in the record.

    The ``*_bit`` fields are masks of the PMU's config bits (tsc, noretcomp, mtc, cyc; ``mtc_freq_bits``
    the mtc_period field), as perf reads them from sysfs, so a reader needs no sysfs of the recording
    machine; ``have_sched_switch`` is 3 when cpu-wide context switch records say which task each cpu
    ran, ``per_cpu_mmaps`` 1 for a per-cpu recording.
    """

    pmu_type: int
    time_shift: int
    time_mult: int
    time_zero: int
    cap_user_time_zero: int
    tsc_bit: int = 1 << 10
    noretcomp_bit: int = 1 << 11
    have_sched_switch: int = 0
    snapshot_mode: int = 0
    per_cpu_mmaps: int = 0
    mtc_bit: int = 1 << 9
    mtc_freq_bits: int = 0xF << 14
    tsc_ctc_ratio_n: int = 0
    tsc_ctc_ratio_d: int = 0
    cyc_bit: int = 1 << 1
    max_nonturbo_ratio: int = 0
    filter_str_len: int = 0

    MIN_WORDS = 10  # up to per_cpu_mmaps: what every perf since Linux 4.1 writes

    def pack(self):
        words = astuple(self)
        body = struct.pack("<II", PERF_AUXTRACE_INTEL_PT, 0) + struct.pack(f"<{len(words)}Q", *words)
        return _HEADER.pack(PERF_RECORD_AUXTRACE_INFO, 0, _HEADER.size + len(body)) + body

    @classmethod
    def unpack(cls, words):
        """From the record's priv words (at least MIN_WORDS; later ones default as in old perf)."""
        return cls(*words[: len(cls.__dataclass_fields__)])


def unpack_auxtrace_info(data, header):
    """``(type, priv words)`` of the AUXTRACE_INFO record at ``header`` (at least AUXTRACE_INFO.size bytes)."""
    _, _, _, kind, _ = AUXTRACE_INFO.unpack_from(data, header.offset)
    count = (header.size - AUXTRACE_INFO.size) // 8
    return kind, struct.unpack_from(f"<{count}Q", data, header.offset + AUXTRACE_INFO.size)


@dataclass(frozen=True)
class AuxtraceBuffer:
    """One AUXTRACE record's bytes: ``size`` bytes at ``file_offset`` in the file, ``offset`` in its AUX stream.

    ``record_offset`` is where the record itself starts in the file, for messages about it.
    """

    file_offset: int
    size: int
    offset: int
    reference: int
    idx: int
    tid: int | None
    cpu: int | None
    record_offset: int = 0

    @property
    def end(self):
        """Where the bytes end in their AUX stream."""
        return self.offset + self.size


def unpack_auxtrace(data, header):
    """The AuxtraceBuffer of the AUXTRACE record at ``header`` (its bytes follow the record)."""
    _, _, _, size, offset, reference, idx, tid, cpu, _ = AUXTRACE.unpack_from(data, header.offset)
    return AuxtraceBuffer(
        file_offset=header.offset + header.size,
        size=size,
        offset=offset,
        reference=reference,
        idx=idx,
        tid=None if tid == NO_CPU else tid,
        cpu=None if cpu == NO_CPU else cpu,
        record_offset=header.offset,
    )


def pack_auxtrace(size, offset, reference, idx, tid, cpu):
    """An AUXTRACE record for ``size`` bytes of trace (which the writer puts right after it)."""
    tid = NO_CPU if tid is None else tid
    cpu = NO_CPU if cpu is None else cpu
    return AUXTRACE.pack(PERF_RECORD_AUXTRACE, 0, AUXTRACE.size, size, offset, reference, idx, tid, cpu, 0)


def pack_time_conv(time_shift, time_mult, time_zero):
    return TIME_CONV.pack(PERF_RECORD_TIME_CONV, 0, TIME_CONV.size, time_shift, time_mult, time_zero)


def pack_finished_round():
    return _HEADER.pack(PERF_RECORD_FINISHED_ROUND, 0, _HEADER.size)
