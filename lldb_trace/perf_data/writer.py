"""Writing a process's trace as a perf.data file, as ``perf record -e intel_pt//u`` lays one out.

The file holds one event (the intel_pt PMU, user space only), the sideband a
decoder needs (a COMM per thread, an MMAP2 per executable segment of each
module, ITRACE_START), the AUXTRACE_INFO that says how to read the trace
(config bit positions, TSC to perf time), and the raw trace bytes in
AUXTRACE records: one buffer per thread (``--per-thread``), or one per cpu
with the cpu-wide context switch records that split it among threads.  The
features name the CPU (HEADER_CPUID), the modules' build-ids and the
architecture.  Every sideband record is at perf time 0, before the first
instruction, so a decoder knows every mapping from the start; a thread that
exited gets a PERF_RECORD_EXIT after its trace.  How each thread stopped (a
signal's details, an exit status) and the children that ran untraced go in
lldb_trace's own feature section (stop_section.py), which perf skips.

A module is recorded under its system path when that file is the one that
ran (same build-id), else under the file lldb_trace read it from (a bundle's
copy), so perf on this machine finds each binary where the file says.
"""

import os
import struct
from dataclasses import dataclass

from .. import libipt
from ..elf_info import ElfInfo
from ..libipt.psb import PSB
from ..perf import attr as perf_attr
from ..perf.auxtrace import IntelPtInfo, pack_auxtrace, pack_finished_round, pack_time_conv
from ..perf.data_file import (
    FILE_HEADER_SIZE,
    MAGIC,
    SECTION,
    BuildIdRecord,
    Feature,
    FileHeader,
    Section,
    pack_build_ids,
    pack_string,
)
from ..perf.records import pack_switch_record
from ..perf.sideband import (
    FORK_EXIT,
    PERF_AUX_FLAG_OVERWRITE,
    PERF_AUX_FLAG_TRUNCATED,
    PERF_RECORD_AUX,
    PERF_RECORD_COMM,
    PERF_RECORD_EXIT,
    PERF_RECORD_ITRACE_START,
    PERF_SAMPLE_CPU,
    PERF_SAMPLE_IDENTIFIER,
    PERF_SAMPLE_TID,
    PERF_SAMPLE_TIME,
    SampleId,
    SampleIdLayout,
    name_bytes,
    pack_mmap2,
    pack_record,
)
from .stop_section import pack_stop_section

INTEL_PT_PMU_TYPE = 8  # the intel_pt PMU's type where the machine has none to ask (a dynamic PMU number)
CONFIG_PT = 1 << 0  # intel_pt format bits: pt, tsc, branch
CONFIG_TSC = 1 << 10
CONFIG_BRANCH = 1 << 13
CONFIG_CYC = 1 << 1  # the masks IntelPtInfo's defaults name: cyc, mtc, mtc_period
CONFIG_MTC = 1 << 9
MTC_PERIOD_SHIFT = 14
# IP, TID, TIME, CPU, IDENTIFIER: perf finds a record's event by its IDENTIFIER once it adds its own events
SAMPLE_TYPE = 1 | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER
TRACE_ID = 1  # the ids of the trace's event and of the sideband's
SIDEBAND_ID = 2
_ID_LAYOUT = SampleIdLayout(SAMPLE_TYPE)
_PAGE = 0x1000
ATTR_SIZE = perf_attr.PERF_ATTR_SIZE_VER5  # the first size with AUX fields: every perf since Linux 4.1 reads it


@dataclass(frozen=True)
class CpuStream:
    """One cpu's raw trace and its context switches (SwitchCpuWide, perf times), for a per-cpu file."""

    cpu: int
    trace: bytes
    switches: tuple


def perf_data_bytes(process, cpu, tsc_conversion=None, cpu_streams=(), pmu_type=INTEL_PT_PMU_TYPE, snapshots=None):
    """The perf.data of ``process`` (a bundle.saver SaveProcess): per thread, or per cpu with ``cpu_streams``.

    A thread's ``breaks`` (where its trace was lost) end AUX buffers flagged TRUNCATED, as the kernel
    flags them, so the loss survives the round trip.  ``snapshots`` (``{tid: [(offset, bytes)]}``) writes
    those threads as snapshot-mode buffers (``perf record -S``) instead: each an AUX area's content, at
    its offset in the area's stream.
    """
    traces = [thread for thread in process.threads if thread.trace]
    streams = [stream.trace for stream in cpu_streams] or [thread.trace for thread in traces]
    timed = bool(cpu_streams) or any(_has_tsc(trace) for trace in streams)  # a per-cpu trace is split by time
    info = IntelPtInfo(
        pmu_type=pmu_type,
        time_shift=tsc_conversion.time_shift if tsc_conversion else 0,
        time_mult=tsc_conversion.time_mult if tsc_conversion else 1,
        time_zero=tsc_conversion.time_zero if tsc_conversion else 0,
        cap_user_time_zero=1 if tsc_conversion else 0,
        have_sched_switch=3 if cpu_streams else 0,
        snapshot_mode=1 if snapshots else 0,
        per_cpu_mmaps=1 if cpu_streams else 0,
        **_clock_words(cpu.clock),
    )
    records = bytearray(info.pack())
    if tsc_conversion:
        records += pack_time_conv(info.time_shift, info.time_mult, info.time_zero)
    names = _recorded_names(process.modules)
    for thread in process.threads:
        records += _task_record(PERF_RECORD_COMM, process.pid, thread.tid, name_bytes(_comm(names)))
    for module in process.modules:
        records += _mmaps(process.pid, module, names.get(module.system_path))
    for thread in process.threads:
        records += _task_record(PERF_RECORD_ITRACE_START, process.pid, thread.tid)
    records += pack_finished_round()
    if cpu_streams:
        for stream in cpu_streams:
            for switch in stream.switches:
                records += _switch(switch, stream.cpu)
        for idx, stream in enumerate(cpu_streams):
            records += _aux_buffers(idx, None, stream.cpu, [(0, stream.trace, 0)])
    else:
        for idx, thread in enumerate(traces):
            pieces = (snapshots or {}).get(thread.tid)
            if pieces is not None:
                pieces = [(offset, data, PERF_AUX_FLAG_OVERWRITE) for offset, data in pieces]
            records += _aux_buffers(idx, thread.tid, None, pieces or _pieces(thread.trace, thread.breaks))
    records += _exits(process, tsc_conversion)
    records += pack_finished_round()
    config = CONFIG_PT | CONFIG_BRANCH | (CONFIG_TSC if timed else 0) | _clock_config(cpu.clock)
    features = {
        Feature.BUILD_ID: pack_build_ids(
            BuildIdRecord(process.pid, module.uuid, names[module.system_path])
            for module in process.modules
            if module.uuid and module.system_path in names
        ),
        Feature.ARCH: pack_string("x86_64"),
        Feature.NRCPUS: struct.pack("<II", max(len(cpu_streams), 1), max(len(cpu_streams), 1)),
        Feature.CPUID: pack_string(_cpuid(cpu)),
    }
    stops = pack_stop_section(process)
    if stops is not None:  # how the threads stopped: a signal's siginfo or an exit status has no perf record
        features[Feature.LLDB_TRACE_STOPS] = stops
    events = ((_trace_attr(pmu_type, config), TRACE_ID), (_sideband_attr(), SIDEBAND_ID))
    return _file(events, bytes(records), features)


def _file(events, records, features):
    """Header, the events' ids, their attribute attr_table, the records, then the feature table and features.

    ``events`` are ``(perf_event_attr, id)``: the trace's own event, and the dummy event perf adds to
    carry the sideband (mappings, tasks, switches), as ``perf record`` does.
    """
    id_section = Section(FILE_HEADER_SIZE, 8 * len(events))
    attr_table = bytearray()
    for k, (attr, _) in enumerate(events):
        attr_table += bytes(attr)[: attr.size] + SECTION.pack(id_section.offset + 8 * k, 8)
    attrs = Section(id_section.end, len(attr_table))
    data = Section(attrs.end, len(records))
    table = bytearray()
    blobs = bytearray()
    blob_start = data.end + SECTION.size * len(features)
    for bit in sorted(features):
        table += SECTION.pack(blob_start + len(blobs), len(features[bit]))
        blobs += features[bit]
    attr_size = len(attr_table) // len(events)
    header = FileHeader(MAGIC, FILE_HEADER_SIZE, attr_size, attrs, data, Section(0, 0), frozenset(features))
    ids = struct.pack(f"<{len(events)}Q", *(event_id for _, event_id in events))
    return b"".join((header.pack(), ids, bytes(attr_table), records, bytes(table), bytes(blobs)))


def _clock_words(clock):
    """AUXTRACE_INFO's words for MTC and CYC packets: what a decoder needs to turn them into time."""
    if clock is None:
        return {}
    numerator, denominator = clock.tsc_ctc_ratio or (0, 0)
    return {
        "tsc_ctc_ratio_n": numerator,
        "tsc_ctc_ratio_d": denominator,
        "max_nonturbo_ratio": clock.nominal_ratio or 0,
    }


def _clock_config(clock):
    if clock is None:
        return 0
    mtc = CONFIG_MTC | clock.mtc_period << MTC_PERIOD_SHIFT if clock.mtc_period is not None else 0
    return mtc | (CONFIG_CYC if clock.cycle_accurate else 0)


def _trace_attr(pmu_type, config):
    attr = perf_attr.perf_event_attr(type=pmu_type, size=ATTR_SIZE, config=config, sample_type=SAMPLE_TYPE)
    attr.sample_period = 1
    attr.exclude_kernel = attr.exclude_hv = 1
    attr.disabled = attr.enable_on_exec = attr.sample_id_all = 1
    return attr


def _sideband_attr():
    """perf's tracking event: a software dummy event that records the mappings, tasks and context switches."""
    attr = perf_attr.perf_event_attr(
        type=perf_attr.PERF_TYPE_SOFTWARE, size=ATTR_SIZE, config=perf_attr.PERF_COUNT_SW_DUMMY, sample_type=SAMPLE_TYPE
    )
    attr.sample_period = 1
    attr.exclude_kernel = attr.exclude_hv = 1
    attr.disabled = attr.enable_on_exec = attr.sample_id_all = 1
    attr.mmap = attr.comm = attr.task = attr.mmap2 = attr.comm_exec = attr.context_switch = 1
    return attr


def _has_tsc(trace, packets=4096):
    """Whether a TSC packet comes among the trace's first ``packets`` (hardware writes one in every PSB+)."""
    try:
        with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
            decoder.sync_forward()
            for _, packet in zip(range(packets), decoder, strict=False):
                if type(packet).__name__ == "Tsc":
                    return True
    except libipt.LibiptError:
        return False
    return False


def _task_record(kind, pid, tid, name=b""):
    return pack_record(
        kind, struct.pack("<II", pid, tid) + name + _ID_LAYOUT.pack(SampleId(pid, tid, 0, SIDEBAND_ID, 0))
    )


def _switch(switch, cpu):
    """A PERF_RECORD_SWITCH_CPU_WIDE with this file's sample_id (pid, tid, time, cpu)."""
    record = bytearray(pack_switch_record(switch.is_out, *_switch_fields(switch), preempted=switch.preempted))
    body = bytes(record[8:16]) + _ID_LAYOUT.pack(SampleId(switch.pid, switch.tid, switch.time_ns, SIDEBAND_ID, cpu))
    return pack_record(15, body, struct.unpack_from("<H", record, 4)[0])


def _switch_fields(switch):
    return switch.pid, switch.tid, switch.next_prev_pid, switch.next_prev_tid, switch.time_ns


def _exits(process, tsc_conversion):
    """A PERF_RECORD_EXIT per thread that exited, after its trace, as the kernel writes one when a task ends.

    Its time is the trace's last TSC (0 without one): perf orders it after the thread's instructions.
    """
    out = bytearray()
    for thread in process.threads:
        if thread.stop is None or not thread.stop.exited:
            continue
        tsc = _last_tsc(thread.trace) if thread.trace and tsc_conversion else None
        time = tsc_conversion.to_ns(tsc) if tsc is not None else 0
        body = FORK_EXIT.pack(process.pid, process.pid, thread.tid, thread.tid, time)
        out += pack_record(
            PERF_RECORD_EXIT, body + _ID_LAYOUT.pack(SampleId(process.pid, thread.tid, time, SIDEBAND_ID, 0))
        )
    return bytes(out)


def _last_tsc(trace):
    """The last TSC value of ``trace``: one is in every PSB+ of a timed trace, so the last PSB on holds it."""
    data = bytes(trace)
    last = None
    try:
        with libipt.PacketDecoder(libipt.Config(data[max(data.rfind(PSB), 0) :])) as decoder:
            decoder.sync_forward()
            for packet in decoder:
                if type(packet).__name__ == "Tsc":
                    last = packet.tsc
    except libipt.LibiptError:
        pass  # the end of the trace, or a damaged tail: the TSCs read so far
    return last


def _pieces(trace, breaks):
    """``[(offset, bytes, AUX flags)]``: the trace cut at its breaks, each piece but the last flagged TRUNCATED."""
    bounds = [0, *(b.offset for b in breaks), len(trace)]
    last = len(bounds) - 2
    return [
        (bounds[k], trace[bounds[k] : bounds[k + 1]], 0 if k == last else PERF_AUX_FLAG_TRUNCATED)
        for k in range(len(bounds) - 1)
    ]


def _aux_buffers(idx, tid, cpu, pieces):
    """Per piece, a PERF_RECORD_AUX then the AUXTRACE record and its bytes, padded to 8 as perf pads them.

    The AUXTRACE offset is where the piece starts in its AUX area's stream; the padding (PAD packets)
    is counted in its size, so the next piece's offset falls inside it, as in perf's own files.
    """
    out = bytearray()
    for offset, data, flags in pieces:
        padded = bytes(data) + b"\0" * (-len(data) % 8)
        sample_id = _ID_LAYOUT.pack(SampleId(tid or 0, tid or 0, 0, TRACE_ID, cpu or 0))
        out += pack_record(PERF_RECORD_AUX, struct.pack("<QQQ", offset, len(data), flags) + sample_id)
        out += pack_auxtrace(len(padded), offset, idx, idx, tid, cpu) + padded
    return bytes(out)


def _recorded_names(modules):
    """``{system path: the name to record}``: the system path if that file is the one that ran, else our copy."""
    names = {}
    for module in modules:
        if module.path is None:
            continue  # only in memory (a live process's vdso), and not written where the perf.data is
        names[module.system_path] = module.system_path
        if str(module.path) != module.system_path and not _same_file(module.system_path, module.uuid):
            names[module.system_path] = os.path.abspath(module.path)
    return names


def _same_file(path, build_id):
    try:
        return os.path.isfile(path) and (not build_id or ElfInfo(path).build_id == build_id)
    except Exception:  # unreadable or not ELF: not the module
        return False


def _mmaps(pid, module, name):
    """One MMAP2 per executable PT_LOAD segment of ``module``, page-aligned as the kernel maps it."""
    if name is None:
        return b""
    if module.contents is not None:  # the vdso: its whole image in one mapping, as the kernel maps it
        sample_id = _ID_LAYOUT.pack(SampleId(pid, pid, 0, SIDEBAND_ID, 0))
        return pack_mmap2(pid, pid, module.load_address, len(module.contents), 0, name, sample_id, module.uuid)
    out = bytearray()
    for segment in ElfInfo(module.path).loaded_segments(module.load_address):
        if not segment.executable:
            continue
        start = segment.vaddr & ~(_PAGE - 1)
        end = -(-(segment.vaddr + segment.size) // _PAGE) * _PAGE
        pgoff = segment.offset - (segment.vaddr - start)
        sample_id = _ID_LAYOUT.pack(SampleId(pid, pid, 0, SIDEBAND_ID, 0))
        out += pack_mmap2(pid, pid, start, end - start, pgoff, name, sample_id, module.uuid)
    return bytes(out)


def _comm(names):
    """The process's command name (as the kernel keeps it: 15 characters): its main executable's file name."""
    first = next(iter(names.values()), "program")
    return os.path.basename(first)[:15]


def _cpuid(cpu):
    vendor = "GenuineIntel" if cpu.vendor == "intel" else "unknown"
    return f"{vendor},{cpu.family},{cpu.model},{cpu.stepping}"
