"""Per-cpu bundles: context switch traces, and splitting each cpu's PT stream among the threads.

The committed bundle test_traces/percpu is a real recording of threads.c laid
onto two virtual cpus (recipe: test_traces/percpu_scenario.py).  Each thread's
stream, as lldb_trace splits it out, must decode to exactly the thread's
single-stepped ground truth; native lldb-22, when installed, must agree.
"""

import json
import shutil
import struct

import pytest
from support import reference_decode
from support.paths import TRACES
from support.trace_scripts import percpu_scenario, scenarios

from lldb_trace import libipt
from lldb_trace.bundle.model import Bundle, CpuInfo, CpuTrace, Process, Thread, TscConversion
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.errors import LldbTraceError
from lldb_trace.libipt import IpCompression, packets
from lldb_trace.perf import pack_lost_record, pack_switch_record
from lldb_trace.sources import per_cpu
from lldb_trace.sources.context_switches import (
    U64_MAX,
    ContextSwitchTraceError,
    Variant,
    parse_context_switches,
    perf_time_to_tsc,
    read_context_switches,
)
from lldb_trace.trace_files import load_trace

COMMITTED = TRACES / "percpu"
CPU = libipt.Cpu(6, 85, 4)
IDENTITY = TscConversion(time_mult=1, time_shift=0, time_zero=0)  # tsc == ns


@pytest.fixture(scope="session")
def percpu_dir(tmp_path_factory):
    """The committed bundle, or the same recipe recorded again when this machine's libraries differ."""
    if scenarios.modules_match(COMMITTED / "trace.json"):
        return COMMITTED
    return percpu_scenario.make(tmp_path_factory.mktemp("percpu") / "percpu").parent


@pytest.fixture(scope="session")
def no_psb_dir(percpu_dir, tmp_path_factory):
    """The same recording laid out without PSBs at switch-ins: slices start at timed re-enables."""
    out = tmp_path_factory.mktemp("percpu-no-psb")
    percpu_scenario.spread(
        percpu_dir / "per_thread" / "trace.json", out, insert_psb=False, ground_truth=percpu_dir / "ground_truth"
    )
    return out


def truth(folder, tid):
    return GroundTruth.read(folder / "ground_truth" / f"{tid}.txt")


def decode(data, folder, decoder_class=libipt.InsnDecoder):
    _, image = reference_decode.bundle_image(folder / "trace.json")
    with image, decoder_class(libipt.Config(data, CPU), image) as decoder:
        return list(reference_decode._items(decoder))


def check_threads_decode_exactly(folder):
    bundle = load_trace(folder / "trace.json")
    split = per_cpu.split_bundle(bundle)
    assert sorted(split.threads) == sorted(t.tid for t in bundle.processes[0].threads)
    for tid, stream in split.threads.items():
        expected = truth(folder, tid).decodable_segments()
        items = decode(stream.data, folder)
        assert reference_decode.segments_of(items) == expected, f"thread {tid}"
        blocks = decode(stream.data, folder, libipt.BlockDecoder)
        assert reference_decode.blocks_tile(blocks, [a for segment in expected for a in segment]), f"thread {tid}"
        assert stream.dropped == 0
    return split


# The context switch trace.


def records(*specs):
    """Switch records from (kind, tid, time) with kind "in" or "out"; pid = tid."""
    return b"".join(pack_switch_record(kind == "out", tid, tid, 0, 0, time) for kind, tid, time in specs)


def test_executions_follow_native_lldb_for_every_missing_switch():
    data = records(
        ("out", 1, 10),  # no switch in before it: only end
        ("in", 2, 20),
        ("out", 2, 30),  # complete
        ("in", 3, 40),
        ("in", 4, 50),  # 3's switch out missing: hinted end
        ("out", 4, 60),  # complete
        ("out", 5, 70),  # 5's switch in missing: hinted start
        ("in", 6, 80),
        ("out", 7, 90),  # an out of another thread: 6 hinted end, 7 hinted start
        ("in", 8, 100),  # the trace ends while 8 runs: only start
    )
    trace = parse_context_switches(data, 3, IDENTITY)
    got = [(e.tid, e.cpu, e.start_tsc, e.end_tsc, e.variant) for e in trace.executions]
    assert got == [
        (1, 3, 0, 10, Variant.ONLY_END),
        (2, 3, 20, 30, Variant.COMPLETE),
        (3, 3, 40, 49, Variant.HINTED_END),
        (4, 3, 50, 60, Variant.COMPLETE),
        (5, 3, 61, 70, Variant.HINTED_START),
        (6, 3, 80, 89, Variant.HINTED_END),
        (7, 3, 81, 90, Variant.HINTED_START),
        (8, 3, 100, U64_MAX, Variant.ONLY_START),
    ]
    assert [r.is_out for r in trace.records][:3] == [True, False, True]
    assert trace.executions[0].lowest_known_tsc == 10 and trace.executions[1].lowest_known_tsc == 20
    assert trace.ignored_tail == 0 and trace.loss_records == 0


def test_record_layout_is_what_linux_writes_for_lldbs_event():
    record = pack_switch_record(True, 100, 101, 200, 201, 123456789, preempted=True)
    assert len(record) == 32
    kind, misc, size, next_pid, next_tid, pid, tid, time = struct.unpack("<IHHIIIIQ", record)
    assert (kind, size) == (15, 32)  # PERF_RECORD_SWITCH_CPU_WIDE, sample_id: TID then TIME
    assert misc == 1 << 13 | 1 << 14  # SWITCH_OUT | SWITCH_OUT_PREEMPT
    assert (next_pid, next_tid, pid, tid, time) == (200, 201, 100, 101, 123456789)
    [parsed] = parse_context_switches(record, 0, IDENTITY).records
    assert (parsed.is_out, parsed.preempted, parsed.pid, parsed.tid) == (True, True, 100, 101)
    assert (parsed.next_prev_pid, parsed.next_prev_tid, parsed.time_ns) == (200, 201, 123456789)


def test_perf_time_converts_back_to_tsc():
    conversion = TscConversion(time_mult=429496730, time_shift=30, time_zero=1_700_000_000_000_000_000)
    for tsc in (0, 1, 2_500_000_000, 11_457_123_456_789, (1 << 56) - 1):
        ns = conversion.to_ns(tsc)
        back = perf_time_to_tsc(conversion, ns)
        assert conversion.to_ns(back) <= ns and tsc - 3 <= back <= tsc
    assert perf_time_to_tsc(IDENTITY, 42) == 42
    # As the kernel's unsigned arithmetic: a time before time_zero wraps around.
    assert perf_time_to_tsc(TscConversion(1, 0, 100), 99) == U64_MAX


def test_other_records_are_skipped_and_losses_counted():
    data = records(("in", 1, 10)) + pack_lost_record(3, 15) + records(("out", 1, 20))
    data += struct.pack("<IHH", 9, 0, 16) + bytes(8)  # a PERF_RECORD_COMM-sized stranger
    trace = parse_context_switches(data, 0, IDENTITY)
    assert [(e.tid, e.variant) for e in trace.executions] == [(1, Variant.COMPLETE)]
    assert trace.loss_records == 1


def test_an_incomplete_trailing_record_is_skipped():
    data = records(("in", 1, 10), ("out", 1, 20), ("in", 2, 30), ("out", 2, 40))
    for cut in (1, 7, 8, 31):
        trace = parse_context_switches(data[: len(data) - cut], 0, IDENTITY)
        assert trace.ignored_tail == 32 - cut
        assert [(e.tid, e.variant) for e in trace.executions] == [(1, Variant.COMPLETE), (2, Variant.ONLY_START)]
    assert parse_context_switches(b"", 0, IDENTITY).executions == ()


@pytest.mark.parametrize(
    "damage, message",
    [
        (struct.pack("<IHH", 15, 0, 0), "offset 32: its size is 0 bytes, less than a perf record header"),
        (struct.pack("<IHH", 15, 0, 9000), "offset 32: its size is 9000 bytes; perf records are at most 8000"),
        (struct.pack("<IHH", 0xDEADBEEF, 0, 32) + bytes(24), "offset 32: record type 3735928559 is not a perf"),
        (struct.pack("<IHH", 15, 0, 24) + bytes(16), "offset 32: a switch record of 24 bytes; it needs 32"),
        (records(("in", 2, 5)), "offset 32: time goes backwards (5 ns, after a record at 10 ns)"),
    ],
    ids=["size-0", "size-huge", "bad-type", "short-switch", "time-backwards"],
)
def test_a_damaged_file_is_one_clean_error_naming_file_and_offset(tmp_path, damage, message):
    path = tmp_path / "0.perf_context_switch_trace"
    path.write_bytes(records(("out", 1, 10)) + damage + records(("in", 3, 50)))
    with pytest.raises(ContextSwitchTraceError) as caught:
        read_context_switches(path, 0, IDENTITY)
    text = str(caught.value)
    assert isinstance(caught.value, LldbTraceError)
    assert "\n" not in text and text.startswith(f"{path}: cpu 0: bad context switch record at ")
    assert message in text


def test_committed_switch_traces_hold_what_real_ones_do(percpu_dir):
    bundle = load_trace(percpu_dir / "trace.json")
    layout = json.loads((percpu_dir / "recording.json").read_text())["layout"]
    seen = {}
    for cpu in bundle.cpus:
        trace = read_context_switches(cpu.context_switches, cpu.cpu_id, bundle.tsc_conversion)
        assert trace.ignored_tail == 0
        seen[cpu.cpu_id] = trace
        ours = [row for row in layout if row["cpu"] == cpu.cpu_id]
        # Every slice the recipe laid out is one execution, the idle task's in between.
        assert [e.tid for e in trace.executions if e.tid != 0] == [row["tid"] for row in ours]
    variants = {e.variant for trace in seen.values() for e in trace.executions}
    assert variants == {Variant.COMPLETE, Variant.ONLY_END, Variant.ONLY_START, Variant.HINTED_END}
    assert seen[1].executions[0].variant == Variant.ONLY_END  # cpu 1's trace starts while a thread runs
    assert sum(trace.loss_records for trace in seen.values()) == 1
    assert any(e.tid == 0 for trace in seen.values() for e in trace.executions)  # the idle task
    assert any(e.tid == percpu_scenario.FOREIGN_PID for e in seen[0].executions)  # another process


# Splitting the PT streams.


def test_each_thread_decodes_to_its_ground_truth(percpu_dir):
    split = check_threads_decode_exactly(percpu_dir)
    pieces = [piece for stream in split.threads.values() for piece in stream.pieces]
    assert {piece.cpu for piece in pieces} == {0, 1}  # threads migrate between the cpus
    assert all(piece.prefix == 0 for piece in pieces)  # every execution starts at a PSB here
    # The other process's PT data (a copy of a real slice) went to nobody.
    assert split.cpus[0].unattributed_bytes > 0 and all(c.dropped_bytes == 0 for c in split.cpus)


def test_slices_starting_at_a_timed_enable_decode_too(no_psb_dir):
    """A PSB block that spans a context switch is cut at the TSC before the next thread's TIP.PGE."""
    split = check_threads_decode_exactly(no_psb_dir)
    prefixed = [piece for stream in split.threads.values() for piece in stream.pieces if piece.prefix]
    assert len(prefixed) >= 5


def test_the_per_thread_recording_matches_too(percpu_dir):
    """The source of the per-cpu bundle is an ordinary per-thread bundle with the same ground truth."""
    source = percpu_dir / "per_thread" / "trace.json"
    for thread in json.loads(source.read_text())["processes"][0]["threads"]:
        items = decode((source.parent / thread["iptTrace"]).read_bytes(), percpu_dir)
        assert reference_decode.segments_of(items) == truth(percpu_dir, thread["tid"]).decodable_segments()


def test_streams_know_where_each_piece_came_from(percpu_dir):
    bundle = load_trace(percpu_dir / "trace.json")
    streams = per_cpu.thread_streams(bundle, [bundle.processes[0].pid, 999999])
    assert sorted(streams) == sorted([bundle.processes[0].pid, 999999])
    assert streams[999999].data == b"" and streams[999999].executions == ()
    stream = streams[bundle.processes[0].pid]
    assert bytes(stream) == stream.data
    cpu_data = {cpu.cpu_id: cpu.trace.read_bytes() for cpu in bundle.cpus}
    for piece, following in zip(stream.pieces, (*stream.pieces[1:], None), strict=True):
        end = following.start if following else len(stream.data)
        assert stream.data[piece.offset : end] == cpu_data[piece.cpu][piece.cpu_offset : piece.cpu_offset + piece.size]
        assert stream.piece_at(piece.start) is piece and stream.piece_at(end - 1) is piece
        assert piece.execution.tid == stream.tid and piece.execution.contains(piece.tsc)
    times = [piece.tsc for piece in stream.pieces]
    assert times == sorted(times)


# Hand-made streams: what happens inside a PSB block that spans a context switch.


def _encode(*items):
    return libipt.encode(list(items))


def _hand_bundle(tmp_path, trace, switches, tids, conversion=IDENTITY):
    (tmp_path / "0.trace").write_bytes(trace)
    (tmp_path / "0.switches").write_bytes(switches)
    return Bundle(
        path=tmp_path / "trace.json",
        format="intel-pt-lldb",
        cpu=CpuInfo("intel", 6, 85, 4),
        processes=(Process(1000, "x86_64-unknown-linux-gnu", tuple(Thread(tid, None) for tid in tids), ()),),
        cpus=(CpuTrace(0, tmp_path / "0.trace", tmp_path / "0.switches"),),
        tsc_conversion=conversion,
    )


def _packet_list(data):
    with libipt.PacketDecoder(libipt.Config(data)) as decoder:
        decoder.sync_forward()
        return list(decoder)


def test_a_block_spanning_switches_is_cut_at_its_tsc_packets(tmp_path):
    mode = packets.ModeExec(libipt.ExecMode.BIT64)
    a_part = _encode(
        packets.Psb(),
        packets.Tsc(1000),
        packets.Psbend(),
        mode,
        packets.TipPge(IpCompression.SEXT_48, 0x401000),
        packets.Tnt8.from_taken([True, False]),
        packets.TipPgd(IpCompression.SUPPRESSED, 0),
    )
    # Thread 2 runs on, mid-flow, after a TSC: no way to start decoding there.
    b_part = _encode(packets.Tsc(2000), packets.Tnt8.from_taken([True]), packets.TipPgd(IpCompression.SUPPRESSED, 0))
    # Thread 3 re-enters user space: its TIP.PGE is compressed against thread 1's last IP.
    c_part = _encode(
        packets.Tsc(3000),
        mode,
        packets.TipPge(IpCompression.UPDATE_16, 0x1100),
        packets.Tnt8.from_taken([False]),
        packets.TipPgd(IpCompression.SUPPRESSED, 0),
    )
    switches = records(("in", 1, 900), ("out", 1, 1500), ("in", 2, 1600), ("out", 2, 2500), ("in", 3, 2800))
    bundle = _hand_bundle(tmp_path, a_part + b_part + c_part, switches, [1, 2, 3])
    split = per_cpu.split_bundle(bundle)
    first, second, third = (split.threads[tid] for tid in (1, 2, 3))
    assert first.data == a_part  # native LLDB would decode the whole block as thread 1
    assert second.data == b"" and second.dropped == len(b_part) and split.cpus[0].dropped_bytes == len(b_part)
    [piece] = third.pieces
    assert piece.prefix > 0 and piece.cpu_offset == len(a_part + b_part)
    listed = _packet_list(third.data)
    assert isinstance(listed[0], packets.Psb) and isinstance(listed[2], packets.Psbend)
    [pge] = [p for p in listed if isinstance(p, packets.TipPge)]
    assert (pge.ipc, pge.ip) == (IpCompression.SEXT_48, 0x401100)
    assert [type(p) for p in listed[3:]] == [
        packets.Tsc,
        packets.ModeExec,
        packets.TipPge,
        packets.Tnt8,
        packets.TipPgd,
    ]


def test_a_block_without_inner_timestamps_stays_with_the_thread_at_its_psb(tmp_path):
    """Like native LLDB: with no TSC after the switch, the cut cannot be located."""
    whole = _encode(
        packets.Psb(),
        packets.Tsc(1000),
        packets.Psbend(),
        packets.ModeExec(libipt.ExecMode.BIT64),
        packets.TipPge(IpCompression.SEXT_48, 0x401000),
        packets.TipPgd(IpCompression.SUPPRESSED, 0),
        packets.ModeExec(libipt.ExecMode.BIT64),
        packets.TipPge(IpCompression.SEXT_48, 0x402000),
        packets.TipPgd(IpCompression.SUPPRESSED, 0),
    )
    switches = records(("in", 1, 900), ("out", 1, 1500), ("in", 2, 1600), ("out", 2, 2500))
    split = per_cpu.split_bundle(_hand_bundle(tmp_path, whole, switches, [1, 2]))
    assert split.threads[1].data == whole and split.threads[2].data == b""


def test_psbs_outside_every_execution_go_to_nobody(tmp_path):
    block = _encode(
        packets.Psb(),
        packets.Tsc(5000),
        packets.Psbend(),
        packets.ModeExec(libipt.ExecMode.BIT64),
        packets.TipPge(IpCompression.SEXT_48, 0x401000),
        packets.TipPgd(IpCompression.SUPPRESSED, 0),
    )
    garbage_head = b"\x55" * 5  # the start of a wrapped buffer: not even a packet boundary
    split = per_cpu.split_bundle(
        _hand_bundle(tmp_path, garbage_head + block, records(("in", 1, 10), ("out", 1, 20)), [1])
    )
    assert split.threads[1].data == b""
    assert [(e.start_tsc, e.end_tsc) for e in split.threads[1].executions] == [(10, 20)]
    assert split.cpus[0].unattributed_bytes == len(garbage_head + block)


def test_unusable_bundles_say_why(tmp_path, percpu_dir):
    untimed = _encode(
        packets.Psb(), packets.Psbend(), packets.ModeExec(libipt.ExecMode.BIT64), packets.TipPge(3, 0x401000)
    )
    with pytest.raises(per_cpu.PerCpuTraceError, match="has no TSC packets: a per-cpu trace can only be split"):
        per_cpu.split_bundle(_hand_bundle(tmp_path, untimed, records(("in", 1, 10)), [1]))
    with pytest.raises(per_cpu.PerCpuTraceError, match="needs 'tscPerfZeroConversion'"):
        per_cpu.split_bundle(_hand_bundle(tmp_path, untimed, b"", [1], conversion=None))
    per_thread = load_trace(percpu_dir / "per_thread" / "trace.json")
    with pytest.raises(per_cpu.PerCpuTraceError, match="has no per-cpu traces"):
        per_cpu.split_bundle(per_thread)


def test_a_damaged_committed_switch_trace_fails_cleanly(tmp_path, percpu_dir):
    copy = tmp_path / "percpu"
    shutil.copytree(percpu_dir, copy, ignore=shutil.ignore_patterns("per_thread"))
    switches = copy / "cpus" / "1.perf_context_switch_trace"
    data = bytearray(switches.read_bytes())
    data[64 + 6 : 64 + 8] = (0).to_bytes(2, "little")  # the third record's size
    switches.write_bytes(bytes(data))
    with pytest.raises(ContextSwitchTraceError, match=r"1\.perf_context_switch_trace: cpu 1: .* at offset 64: "):
        per_cpu.split_bundle(load_trace(copy / "trace.json"))


# Native LLDB as an independent check.


def test_native_lldb_splits_the_bundle_the_same_way(percpu_dir):
    from support import native_lldb

    if not native_lldb.available():
        pytest.skip("Debian's lldb-22 with python3-lldb-22 is not installed")
    decoded = native_lldb.decode_addresses(percpu_dir / "trace.json")
    bundle = load_trace(percpu_dir / "trace.json")
    assert sorted(decoded) == sorted(t.tid for t in bundle.processes[0].threads)
    ours = per_cpu.thread_streams(bundle)
    for tid, items in decoded.items():
        assert items == list(truth(percpu_dir, tid).addresses), f"thread {tid}"  # no gaps, no errors
        mine = [item.ip for item in decode(ours[tid].data, percpu_dir) if isinstance(item, libipt.Insn)]
        assert mine == items, f"thread {tid}"


def test_the_recipe_remakes_the_bundle_from_its_recording(percpu_dir, tmp_path):
    """The per-cpu bundle is exactly what percpu_scenario.spread makes of the per-thread recording beside it."""
    percpu_scenario.spread(percpu_dir / "per_thread" / "trace.json", tmp_path, ground_truth=percpu_dir / "ground_truth")
    for name in ["trace.json", *(f"cpus/{p.name}" for p in (percpu_dir / "cpus").iterdir())]:
        assert (tmp_path / name).read_bytes() == (percpu_dir / name).read_bytes(), name
