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
- How threads stopped: lldb_trace's own section (stop_section.py) when the
  file has one; else a thread a PERF_RECORD_EXIT says ended has exited; else
  nothing is known (a thread shows "end of trace").
"""

from dataclasses import replace
from pathlib import Path

from ..bundle.model import Bundle, CpuInfo, CpuTrace, MissingModule, Module, Process, Thread, ThreadStop
from ..perf.data_file import Feature
from ..perf.records import pack_switch_record
from .aux_streams import join_streams
from .binaries import BinarySearch, find_binary
from .clocks import clock_info, tsc_conversion
from .reader import PerfDataError, read_recording
from .stop_section import read_stop_section

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
    tsc = tsc_conversion(recording)
    if per_cpu and tsc is None:
        raise PerfDataError(
            f"{recording.path}: a per-cpu Intel PT recording without TSC conversion (the kernel gave no "
            "time_zero): its cpus' traces cannot be split among threads; record with --per-thread"
        )
    if not any(len(stream) for stream in streams.values()):
        announced = sum(notice.size for notice in recording.aux)
        damaged = f" although its AUX records announce {announced} bytes: the file is damaged" if announced else ""
        raise PerfDataError(f"{recording.path}: its Intel PT event recorded no trace data (no AUXTRACE bytes){damaged}")
    tids = _traced_tids(recording, streams, per_cpu)
    mappings = {}
    for _, mapping in recording.mmaps:
        mappings.setdefault(mapping.pid, []).append(mapping)
    found = sorted(_by_process(recording, tids))
    stops = _stops(recording)
    processes = tuple(_process(recording, pid, sorted(t), mappings[pid], search, stops.get(pid)) for pid, t in found)
    if not processes:
        raise PerfDataError(f"{recording.path}: no traced thread belongs to a process with executable mappings")
    return Bundle(
        path=Path(recording.path),
        format=FORMAT,
        cpu=replace(_cpu(recording.cpuid), clock=clock_info(recording)),
        processes=processes,
        cpus=tuple(_cpu_trace(recording, cpu, stream) for cpu, stream in sorted(streams.items())) if per_cpu else (),
        tsc_conversion=tsc,
        thread_streams=None if per_cpu else streams,
    )


def _cpu(cpuid):
    """The CpuInfo of an x86 HEADER_CPUID (vendor,family,model,stepping); unknown when absent, not Intel, or
    with numbers no CPUID gives (libipt would apply the errata of some other model)."""
    parts = (cpuid or "").split(",")
    if len(parts) >= 4 and parts[0] == "GenuineIntel":
        try:
            family, model, stepping = (int(part) for part in parts[1:4])
        except ValueError:
            family = model = stepping = -1
        if 0 <= family <= 0xFFFF and 0 <= model <= 0xFF and 0 <= stepping <= 0xFF:
            return CpuInfo("intel", family, model, stepping)
    return CpuInfo("unknown", 0, 0, 0)


def _traced_tids(recording, streams, per_cpu):
    if not per_cpu:
        return set(streams)  # every thread with trace data, or with trace data lost
    ran = {s.tid for switches in recording.switches.values() for s in switches} - {0, 0xFFFFFFFF}
    processes = {recording.pids.get(tid) for tid in ran}
    return ran | {tid for tid, pid in recording.pids.items() if pid in processes}


def _by_process(recording, tids):
    """``[(pid, {tids})]`` of the processes that have code mapped."""
    mapped = {mapping.pid for _, mapping in recording.mmaps}
    found = {}
    for tid in tids:
        pid = recording.pids.get(tid, tid)
        if pid in mapped:
            found.setdefault(pid, set()).add(tid)
    for tid, pid in recording.pids.items():  # threads that never ran traced still belong to the process
        if pid in found:
            found[pid].add(tid)
    return found.items()


def _stops(recording):
    """``{pid: ProcessStops}`` from lldb_trace's section of the file; {} when it has none (perf record's files)."""
    section = recording.features.get(Feature.LLDB_TRACE_STOPS)
    if section is None:
        return {}
    return read_stop_section(section, lambda reason: _fail(recording, reason))


def _fail(recording, reason):
    raise PerfDataError(f"{recording.path}: {reason}")


def _thread(recording, tid, said):
    """The Thread ``tid``: stopped as lldb_trace's section says, else exited if a PERF_RECORD_EXIT says so."""
    stop = said.stops.get(tid) if said else None
    if stop is None and tid in recording.exits:
        stop = ThreadStop.exit()  # perf records that a task ended, not its status
    return Thread(tid, None, stop)


def _process(recording, pid, tids, mappings, search, said=None):
    modules, missing, seen = [], [], set()
    for mapping in mappings:
        if mapping.filename in seen or mapping.filename.startswith(_NO_CODE):
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
    threads = tuple(_thread(recording, tid, said) for tid in tids)
    name = recording.comms.get(pid)
    children, untraced = (said.untraced_children, said.untraced_threads) if said else ((), ())
    return Process(pid, TRIPLE, threads, tuple(modules), tuple(missing), name, children, untraced)


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
