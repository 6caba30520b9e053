"""The recipe of test_traces/percpu: a real recording of threads.c, spread over two virtual cpus.

    python test_traces/percpu_scenario.py [--no-psb] [OUTDIR]      (default OUTDIR: test_traces/percpu)

The software recorder writes one PT stream per thread.  A per-cpu bundle, as
native LLDB records it, has one PT stream per cpu and a context switch trace
per cpu instead.  This script makes such a bundle from a real recording:

1. ``threads.c`` is recorded with all threads and TSC packets into
   ``OUTDIR/per_thread/``, an ordinary per-thread bundle (kept: it is the
   source of the per-cpu one, and its ground truth is the ground truth here).
2. Each thread's stream is cut into time slices where the thread re-enters
   user space (at each ``TSC, MODE.Exec, TIP.PGE`` after a ``TIP.PGD``: a
   thread is switched out while it is in the kernel, so a slice ends with a
   disable, as in hardware traces of user space).
3. A small scheduler runs the slices on two virtual cpus, one thread per cpu
   at a time: a thread's slices keep their order, a thread may migrate, a
   worker is ready only once the main thread's slice that created it has run,
   and a cpu with nothing ready idles.
4. The slices are written one after the other into each cpu's stream, with
   every TSC packet rewritten to the virtual time the slice runs at.  With
   ``insert_psb`` (the default, and the committed bundle), a slice that starts
   at a re-enable gets a ``PSB, TSC, PSBEND`` in front and its TIP.PGE is
   re-encoded against the reset last IP: native LLDB can only start decoding
   an execution at a PSB.  Without it (``--no-psb``), the TIP.PGE is
   re-encoded against the last IP of whatever ran before on that cpu, as
   hardware would compress it, and a thread's slice can only be decoded from
   the timed enable (what lldb_trace's splitter handles and native LLDB
   cannot).
5. Each cpu's context switch trace is written in exactly the layout native
   LLDB collects (32-byte PERF_RECORD_SWITCH_CPU_WIDE records with sample_id
   TID and TIME, times in perf nanoseconds), including what real traces
   contain: switches to the idle task (pid 0) when a cpu waits, another
   process running between two of ours (with PT data of its own, copied from a
   real slice: decoders must not give it to any of our threads), a trace that
   starts on cpu 1 while a thread already runs (no first switch in), traces
   that end while threads run (no last switch out), and one switch out lost
   (a PERF_RECORD_LOST in its place).

``tscPerfZeroConversion`` describes a 2.5 GHz TSC (ns = tsc * 0.4), with the
virtual TSC starting where the recording's clock did, so times shown are close
to the real time of the recording.  The bundle's threads decode exactly to
``ground_truth/<tid>.txt``: in native lldb-22 and in lldb_trace.
"""

import json
import random
import shutil
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from scenarios import DYNAMIC, Scenario  # noqa: E402
from scenarios import make as make_scenario  # noqa: E402

from lldb_trace import libipt  # noqa: E402
from lldb_trace.bundle.model import TscConversion  # noqa: E402
from lldb_trace.capture.ptrace_recorder.recording import RecordOptions  # noqa: E402
from lldb_trace.libipt import IpCompression, packets  # noqa: E402
from lldb_trace.perf import pack_lost_record, pack_switch_record  # noqa: E402

RECIPE = Scenario(
    "percpu",
    "threads.c",
    (*DYNAMIC, "-no-pie"),
    RecordOptions(all_threads=True, tsc=True, psb_period=512),
    committed=False,  # not one of scenarios.SCENARIOS: this file makes it
)
CPUS = 2
SEED = 20240601
FOREIGN_PID = 2323  # "another process" sharing cpu 0 for a moment
TIME_SHIFT = 30
TIME_MULT = 429496730  # 0.4 * 2**30: a 2.5 GHz TSC
SWITCH_TICKS = 500  # between one task's switch out and the next one's switch in
IDLE_AFTER = 4000  # a cpu that waits longer than this runs the idle task in between
TICKS_PER_BYTE = 40
IP_PACKETS = (packets.Fup, packets.Tip, packets.TipPge, packets.TipPgd)  # the packets that carry an IP
EDGE_TICKS = 200  # from a switch in to the slice's first TSC, and from its end to the switch out


@dataclass
class Slice:
    """Bytes [start, end) of a thread's stream (``tid`` None: the other process), and its place on a cpu."""

    tid: int | None
    index: int  # among the thread's slices
    last: bool  # the thread's last slice
    source: bytes  # the thread's whole stream
    start: int
    end: int
    packets: list  # (offset, Packet) inside the slice
    pge_ip: int | None  # the full IP of the TIP.PGE a re-enable slice starts with (None: starts at a PSB)
    end_ip: int | None  # the last IP when the slice ends
    real_tsc: int  # the recorded time of its first TSC packet
    ready: int = 0
    cpu: int | None = None
    t_in: int = 0
    t_out: int = 0
    data: bytes = b""

    @property
    def ticks(self):
        return 2 * EDGE_TICKS + TICKS_PER_BYTE * (self.end - self.start)


@dataclass
class CpuLog:
    """A virtual cpu: the slices it ran, in order, and what is written for it."""

    cpu: int
    slices: list = field(default_factory=list)
    free_at: int = 0
    stream: bytearray = field(default_factory=bytearray)
    records: list = field(default_factory=list)  # record bytes, in time order


def _packets(data):
    """Every packet of a thread's stream with its offset (streams start with a PSB)."""
    found = []
    with libipt.PacketDecoder(libipt.Config(data)) as decoder:
        decoder.sync_forward()
        while True:
            offset = decoder.offset
            try:
                packet = decoder.next()
            except libipt.LibiptError as error:
                if error.code == libipt.ErrorCode.EOS:
                    break
                raise
            found.append((offset, packet))
    return found


def _full_ip(packet, last_ip):
    masks = {
        IpCompression.UPDATE_16: 0xFFFF,
        IpCompression.UPDATE_32: 0xFFFFFFFF,
        IpCompression.UPDATE_48: (1 << 48) - 1,
    }
    if packet.ipc in masks:
        return ((last_ip or 0) & ~masks[packet.ipc]) | packet.ip
    if packet.ipc == IpCompression.SEXT_48:
        return packet.ip | (0xFFFF << 48) if packet.ip >> 47 & 1 else packet.ip
    return packet.ip


def _compressed(ip, last_ip):
    """The cheapest (ipc, payload) for ``ip`` after ``last_ip`` (None: no last IP, as after a PSB)."""
    if last_ip is not None and last_ip >> 16 == ip >> 16:
        return IpCompression.UPDATE_16, ip & 0xFFFF
    if last_ip is not None and last_ip >> 32 == ip >> 32:
        return IpCompression.UPDATE_32, ip & 0xFFFFFFFF
    if ip >> 47 in (0, 0x1FFFF):
        return IpCompression.SEXT_48, ip & ((1 << 48) - 1)
    return IpCompression.FULL, ip


def cut_slices(tid, data, rng):
    """Cut a thread's stream at some of its re-enables (TIP.PGD, then TSC, MODE.Exec..., TIP.PGE)."""
    found = _packets(data)
    ip_after = []  # the last IP once packet i is read
    last_ip = None
    for _, packet in found:
        if isinstance(packet, packets.Psb):
            last_ip = None
        elif isinstance(packet, IP_PACKETS) and packet.ipc != IpCompression.SUPPRESSED:
            last_ip = _full_ip(packet, last_ip)
        ip_after.append(last_ip)
    enables = []  # (packet index of the TSC, full IP of its TIP.PGE)
    for index, (_, packet) in enumerate(found):
        if isinstance(packet, packets.Tsc) and index > 0 and isinstance(found[index - 1][1], packets.TipPgd):
            following = index + 1
            while following < len(found) and isinstance(found[following][1], packets.ModeExec):
                following += 1
            if following < len(found) and isinstance(found[following][1], packets.TipPge):
                enables.append((index, ip_after[following]))
    cuts = [(0, None)]
    countdown = rng.randint(1, 4)
    for enable in enables:
        countdown -= 1
        if countdown == 0:
            cuts.append(enable)
            countdown = rng.randint(1, 4)
    slices = []
    for number, (first, pge_ip) in enumerate(cuts):
        stop = cuts[number + 1][0] if number + 1 < len(cuts) else len(found)
        start = found[first][0]
        end = found[stop][0] if stop < len(found) else len(data)
        inside = found[first:stop]
        real = next(packet.tsc for _, packet in inside if isinstance(packet, packets.Tsc))
        last = number == len(cuts) - 1
        slices.append(Slice(tid, number, last, data, start, end, inside, pge_ip, ip_after[stop - 1], real))
    return slices


def render(piece, cpu_last_ip, insert_psb):
    """The slice's bytes as written on its cpu: TSCs retimed, its re-enable made decodable there."""
    out = bytearray()
    encode = libipt.encode
    pending_pge = piece.pge_ip is not None
    last_ip = cpu_last_ip
    for offset, packet in piece.packets:
        if isinstance(packet, packets.Tsc):
            tsc = encode([packets.Tsc(piece.t_in + EDGE_TICKS + TICKS_PER_BYTE * (offset - piece.start))])
            if pending_pge and insert_psb:
                out += encode([packets.Psb()]) + tsc + encode([packets.Psbend()])
                last_ip = None
            else:
                out += tsc
        elif isinstance(packet, packets.TipPge) and pending_pge:
            ipc, payload = _compressed(piece.pge_ip, last_ip)
            out += encode([packets.TipPge(ipc, payload)])
            pending_pge = False
        else:
            out += piece.source[offset : offset + packet.size]
    return bytes(out)


def schedule(slices_by_tid, leader, foreign):
    """Give every slice a cpu and a time window.

    Returns the CpuLogs, each with its slices in run order.  ``foreign`` (a
    slice of the other process) runs on cpu 0 right after its second slice.
    """
    start = min(s[0].real_tsc for s in slices_by_tid.values()) * 5 // 2
    cpus = [CpuLog(n, free_at=start) for n in range(CPUS)]
    pending = {tid: deque(slices) for tid, slices in slices_by_tid.items()}
    first_real = {tid: slices[0].real_tsc for tid, slices in slices_by_tid.items()}
    uncreated = set(pending) - {leader}
    ready = [pending[leader].popleft()]
    ready[0].ready = start
    while ready:
        cpu = min(cpus, key=lambda c: (c.free_at, c.cpu))
        # A cpu's stream begins with a thread's first slice (at a PSB: decodable without inserted PSBs too).
        allowed = [s for s in ready if cpu.slices or s.index == 0]
        if cpu.cpu == 0 and len(cpu.slices) == 2 and foreign is not None and foreign.cpu is None:
            allowed = [foreign]
        chosen = min(allowed, key=lambda s: s.ready, default=None)
        if chosen is None or chosen.ready > cpu.free_at:
            # Wait for the next slice to be ready, or for the other cpu to make one ready.
            others = [c.free_at for c in cpus if c.free_at > cpu.free_at]
            cpu.free_at = min([s.ready for s in allowed] + others) if allowed or others else cpu.free_at + IDLE_AFTER
            continue
        if chosen is not foreign:
            ready.remove(chosen)
        chosen.cpu = cpu.cpu
        chosen.t_in = max(cpu.free_at, chosen.ready) + (SWITCH_TICKS if cpu.slices else 0)
        chosen.t_out = chosen.t_in + chosen.ticks
        cpu.slices.append(chosen)
        cpu.free_at = chosen.t_out
        if chosen is foreign:
            continue
        if pending[chosen.tid]:
            following = pending[chosen.tid].popleft()
            following.ready = chosen.t_out + 1
            ready.append(following)
        if chosen.tid == leader:
            # Workers the main thread created during this slice (by the recording's clock) become ready.
            until = pending[leader][0].real_tsc if pending[leader] else None
            for tid in sorted(uncreated):
                if until is None or first_real[tid] < until:
                    uncreated.discard(tid)
                    created = pending[tid].popleft()
                    created.ready = chosen.t_out
                    ready.append(created)
    return cpus


def _records(cpu, pid, conversion, lose_one):
    """The cpu's switch records, as the kernel would write them; returns the layout rows and whether one was lost."""
    ns = conversion.to_ns
    rows = []
    runs = cpu.slices

    def task(piece):
        return (FOREIGN_PID, FOREIGN_PID) if piece.tid is None else (pid, piece.tid)

    def record(tsc, is_out, who, other):
        cpu.records.append(pack_switch_record(is_out, who[0], who[1], other[0], other[1], ns(tsc)))

    lost_one = False
    for position, piece in enumerate(runs):
        previous = runs[position - 1] if position else None
        following = runs[position + 1] if position + 1 < len(runs) else None
        idle_before = previous is not None and piece.t_in - previous.t_out > IDLE_AFTER
        idle_after = following is None or following.t_in - piece.t_out > IDLE_AFTER
        if idle_before:
            record(previous.t_out + SWITCH_TICKS // 2, False, (0, 0), task(previous))
            record(piece.t_in - SWITCH_TICKS // 2, True, (0, 0), task(piece))
        came_from = (0, 0) if previous is None or idle_before else task(previous)
        goes_to = (0, 0) if idle_after else task(following)
        # Tracing on cpu 1 starts while its first thread already runs; it ends while the last ones run.
        in_recorded = not (position == 0 and cpu.cpu == 1 and piece.tid is not None and piece.index == 0)
        out_recorded = not (following is None and piece.tid is not None and piece.last)
        lost = out_recorded and lose_one and not lost_one and piece.tid is not None and piece.last
        if in_recorded:
            record(piece.t_in, False, task(piece), came_from)
        if lost:
            lost_one = True
            cpu.records.append(pack_lost_record(1, ns(piece.t_out), pid=pid, tid=piece.tid))
        elif out_recorded:
            record(piece.t_out, True, task(piece), goes_to)
        rows.append(
            {
                "cpu": cpu.cpu,
                "pid": task(piece)[0],
                "tid": task(piece)[1],
                "slice": piece.index if piece.tid is not None else "another process",
                "bytes": len(piece.data),
                "in_tsc": piece.t_in,
                "out_tsc": piece.t_out,
                "switch_in": "recorded" if in_recorded else "not recorded: tracing started while it ran",
                "switch_out": (
                    "lost: a PERF_RECORD_LOST in its place"
                    if lost
                    else "recorded"
                    if out_recorded
                    else "not recorded: tracing ended while it ran"
                ),
            }
        )
    return rows, lost_one


def spread(per_thread_bundle, outdir, insert_psb=True, seed=SEED, ground_truth=None):
    """Write the per-cpu bundle made from ``per_thread_bundle`` into ``outdir``; returns its trace.json.

    ``ground_truth`` is the folder of the recording's ground truth files
    (default: the per-thread bundle's ``ground_truth``).  Module files the
    per-thread bundle carries are copied into ``outdir/modules``.
    """
    per_thread_bundle, outdir = Path(per_thread_bundle), Path(outdir)
    source_dir = per_thread_bundle.parent
    source = json.loads(per_thread_bundle.read_text())
    process = source["processes"][0]
    pid = process["pid"]
    tids = [thread["tid"] for thread in process["threads"]]
    rng = random.Random(seed)
    slices = {
        t["tid"]: cut_slices(t["tid"], (source_dir / t["iptTrace"]).read_bytes(), rng) for t in process["threads"]
    }
    donor = next(pieces[0] for tid, pieces in sorted(slices.items()) if tid != pid)
    foreign = Slice(None, 0, True, donor.source, donor.start, donor.end, donor.packets, None, donor.end_ip, 0)
    cpus = schedule(slices, pid, foreign)
    conversion = TscConversion(TIME_MULT, TIME_SHIFT, source["tscPerfZeroConversion"]["timeZero"])
    layout, lose_one = [], True
    for cpu in cpus:
        last_ip = None
        for piece in cpu.slices:
            piece.data = render(piece, last_ip, insert_psb)
            cpu.stream += piece.data
            last_ip = piece.end_ip
        rows, lost = _records(cpu, pid, conversion, lose_one)
        lose_one = lose_one and not lost
        layout += rows

    for owned in ("cpus", "modules", "ground_truth"):
        shutil.rmtree(outdir / owned, ignore_errors=True)
    (outdir / "cpus").mkdir(parents=True)
    listed_cpus = []
    for cpu in cpus:
        trace, switches = f"cpus/{cpu.cpu}.intelpt_trace", f"cpus/{cpu.cpu}.perf_context_switch_trace"
        (outdir / trace).write_bytes(bytes(cpu.stream))
        (outdir / switches).write_bytes(b"".join(cpu.records))
        listed_cpus.append({"id": cpu.cpu, "iptTrace": trace, "contextSwitchTrace": switches})
    shutil.copytree(Path(ground_truth or source_dir / "ground_truth"), outdir / "ground_truth")
    modules = [dict(module) for module in process["modules"]]
    for module in modules:
        if "file" in module:
            copied = Path("modules") / Path(module["file"]).name
            (outdir / "modules").mkdir(exist_ok=True)
            shutil.copy2(source_dir / module["file"], outdir / copied)
            module["file"] = str(copied)
    bundle = {
        "type": "intel-pt",
        "cpuInfo": source["cpuInfo"],
        "processes": [
            {
                "pid": pid,
                "triple": process["triple"],
                "threads": [{"tid": t} for t in tids],
                "modules": modules,
            }
        ],
        "cpus": listed_cpus,
        "tscPerfZeroConversion": {"timeMult": TIME_MULT, "timeShift": TIME_SHIFT, "timeZero": conversion.time_zero},
    }
    path = outdir / "trace.json"
    path.write_text(json.dumps(bundle, indent=2) + "\n")
    recording = json.loads((source_dir / "recording.json").read_text())
    made_from = source_dir.relative_to(outdir) if source_dir.is_relative_to(outdir) else source_dir
    recording.update(
        {
            "made_from": str(made_from),
            "recipe": "test_traces/percpu_scenario.py",
            "insert_psb": insert_psb,
            "layout": sorted(layout, key=lambda row: (row["in_tsc"], row["cpu"])),
        }
    )
    (outdir / "recording.json").write_text(json.dumps(recording, indent=2) + "\n")
    return path


def make(outdir=HERE / "percpu", insert_psb=True):
    """Record threads.c and spread it over two cpus into OUTDIR; returns its trace.json.

    The recording stays in OUTDIR/per_thread as a per-thread bundle that
    shares the per-cpu bundle's module copy and ground truth.
    """
    outdir = Path(outdir)
    per_thread = outdir / "per_thread"
    make_scenario(RECIPE, per_thread)
    path = spread(per_thread / "trace.json", outdir, insert_psb=insert_psb)
    source = json.loads((per_thread / "trace.json").read_text())
    for module in source["processes"][0]["modules"]:
        if "file" in module:
            module["file"] = str(Path("..") / "modules" / Path(module["file"]).name)
    (per_thread / "trace.json").write_text(json.dumps(source, indent=2) + "\n")
    shutil.rmtree(per_thread / "modules")
    shutil.rmtree(per_thread / "ground_truth")
    return path


def main(argv):
    insert_psb = "--no-psb" not in argv
    rest = [arg for arg in argv if arg != "--no-psb"]
    path = make(Path(rest[0]) if rest else HERE / "percpu", insert_psb=insert_psb)
    print(f"percpu: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
