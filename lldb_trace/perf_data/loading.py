"""A perf.data's Recording as a Bundle: the same processes, threads, modules and traces a JSON bundle gives.

- CPU: the HEADER_CPUID feature (``GenuineIntel,6,85,4``); TSC to perf time:
  the AUXTRACE_INFO words, when the kernel gave perf a time_zero.
- Processes and threads: every task with trace data (per thread: an AUX
  area's tid; per cpu: the tasks the context switch records show running on a
  traced cpu, in a process with executable mappings), joined by COMM, FORK
  and ITRACE_START records to their process.
- Modules: each executable MMAP/MMAP2 of the process, placed from the mapped
  file offset (``pgoff``) and the ELF's segment there; the binary is searched
  for as binaries.py says.  One that is not found is a MissingModule: its
  code is a gap in the decode, named by ``trace dump``.
"""

from dataclasses import replace
from pathlib import Path

from ..bundle.model import Bundle, ClockInfo, CpuInfo, CpuTrace, MissingModule, Module, Process, Thread, TscConversion
from ..perf.records import pack_switch_record
from .aux_streams import join_streams
from .binaries import BinarySearch, find_binary
from .reader import PerfDataError, read_recording

TRIPLE = "x86_64-unknown-linux-gnu"
FORMAT = "perf.data"
_PAGE = 0x1000
_NO_CODE = ("[heap]", "[stack]", "[vsyscall]", "[vvar]", "//anon", "[anon")  # mappings with no file of code


def load_perf_data(path, search=None):
    """The Bundle of the perf.data at ``path``; ``search`` (a BinarySearch) says where else binaries may be."""
    recording = read_recording(path)
    search = search or BinarySearch.default()
    streams = join_streams(recording)
    per_cpu = bool(recording.intel_pt.per_cpu_mmaps)
    tsc = _tsc_conversion(recording.intel_pt)
    if per_cpu and tsc is None:
        raise PerfDataError(
            f"{recording.path}: a per-cpu Intel PT recording without TSC conversion (the kernel gave no "
            "time_zero): its cpus' traces cannot be split among threads; record with --per-thread"
        )
    if not any(len(stream) for stream in streams.values()):
        raise PerfDataError(f"{recording.path}: its Intel PT event recorded no trace data (no AUXTRACE bytes)")
    tids = _traced_tids(recording, streams, per_cpu)
    processes = tuple(_process(recording, pid, sorted(t), search) for pid, t in sorted(_by_process(recording, tids)))
    if not processes:
        raise PerfDataError(f"{recording.path}: no traced thread belongs to a process with executable mappings")
    return Bundle(
        path=Path(recording.path),
        format=FORMAT,
        cpu=replace(_cpu(recording.cpuid), clock=_clock(recording.intel_pt, recording.pt_config)),
        processes=processes,
        cpus=tuple(_cpu_trace(recording, cpu, stream) for cpu, stream in sorted(streams.items())) if per_cpu else (),
        tsc_conversion=tsc,
        thread_streams=None if per_cpu else streams,
    )


def _cpu(cpuid):
    """The CpuInfo of an x86 HEADER_CPUID (vendor,family,model,stepping); unknown when absent or not Intel."""
    parts = (cpuid or "").split(",")
    if len(parts) >= 4 and parts[0] == "GenuineIntel":
        try:
            return CpuInfo("intel", int(parts[1]), int(parts[2]), int(parts[3]))
        except ValueError:
            pass
    return CpuInfo("unknown", 0, 0, 0)


def _clock(info, config):
    """What the event's MTC and CYC packets mean (AUXTRACE_INFO's masks and ratios), or None without them."""
    mtc, cyc = bool(config & info.mtc_bit), bool(config & info.cyc_bit)
    if not (mtc or cyc):
        return None
    mask = info.mtc_freq_bits
    period = (config & mask) >> ((mask & -mask).bit_length() - 1) if mtc and mask else None
    ratio = (info.tsc_ctc_ratio_n, info.tsc_ctc_ratio_d)
    return ClockInfo(
        mtc_period=period,
        tsc_ctc_ratio=ratio if all(ratio) else None,
        nominal_ratio=info.max_nonturbo_ratio or None,
        cycle_accurate=cyc,
    )


def _tsc_conversion(info):
    if not info.cap_user_time_zero:
        return None
    return TscConversion(time_mult=info.time_mult, time_shift=info.time_shift, time_zero=info.time_zero)


def _traced_tids(recording, streams, per_cpu):
    if not per_cpu:
        return {tid for tid, stream in streams.items() if len(stream)}
    ran = {s.tid for switches in recording.switches.values() for s in switches} - {0}
    return ran | {tid for tid, pid in recording.pids.items() if pid in {recording.pids.get(t) for t in ran}}


def _by_process(recording, tids):
    """``[(pid, {tids})]`` of the processes that have code mapped."""
    mapped = {mapping.pid for _, mapping in recording.mmaps}
    found = {}
    for tid in tids:
        pid = recording.pids.get(tid, tid)
        if pid in mapped and pid not in (0, 0xFFFFFFFF):
            found.setdefault(pid, set()).add(tid)
    for tid, pid in recording.pids.items():  # threads that never ran traced still belong to the process
        if pid in found:
            found[pid].add(tid)
    return found.items()


def _process(recording, pid, tids, search):
    modules, missing, seen = [], [], set()
    for _, mapping in recording.mmaps:
        if mapping.pid != pid or mapping.filename in seen or mapping.filename.startswith(_NO_CODE):
            continue
        seen.add(mapping.filename)
        build_id = mapping.build_id or recording.build_ids.get(mapping.filename)
        path, elf = find_binary(mapping.filename, build_id, search)
        load_address = _load_address(elf, mapping) if elf is not None else None
        module = None
        if load_address is not None:
            module = Module.from_elf(mapping.filename, path, elf, load_address, build_id)
        if module is None or any(_overlap(module, other) for other in modules):
            if module is None:
                end = mapping.addr + mapping.length
                missing.append(MissingModule(mapping.filename, build_id, mapping.addr, end))
            continue
        modules.append(module)
    threads = tuple(Thread(tid, None) for tid in tids)
    name = recording.comms.get(pid)
    return Process(pid, TRIPLE, threads, tuple(modules), tuple(missing), name)


def _load_address(elf, mapping):
    """Where ``elf``'s lowest page is when file offset ``pgoff`` is mapped at ``addr``; None if no segment has it."""
    for segment in sorted(elf.segments, key=lambda s: not s.executable):
        page_offset = segment.offset & ~(_PAGE - 1)
        if page_offset <= mapping.pgoff < segment.offset + max(segment.size, 1):
            bias = mapping.addr - mapping.pgoff - segment.vaddr + segment.offset
            return elf.first_load_vaddr + bias
    return None


def _overlap(module, other):
    return (
        module.load_address < other.load_address + other.size and other.load_address < module.load_address + module.size
    )


def _cpu_trace(recording, cpu, stream):
    """A per-cpu CpuTrace of the perf.data: its cpu's AUX stream, and its switch records in LLDB's layout."""
    switches = b"".join(
        pack_switch_record(s.is_out, s.pid, s.tid, s.next_prev_pid, s.next_prev_tid, s.time_ns, s.preempted)
        for s in recording.switches.get(cpu, ())
    )
    path = Path(recording.path)
    return CpuTrace(cpu, path, path, trace_data=bytes(stream.data), switch_data=switches, breaks=stream.breaks)
