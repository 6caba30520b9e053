"""Fine timing: MTC and CYC packets written from a clock come back from libipt as that clock's readings.

A real program's recorded flow (test_traces/static's ground truth) is
replayed through the recorder with a clock that is a pure function of the
instruction index, and the stream decoded with the bundle-side ClockInfo, as
any trace is: libipt's time tracking (TSC, TMA, MTC, CYC, CBR) does the
estimate, these tests only compare it with the readings.
"""

import shutil

import numpy as np
import pytest
from support.paths import TRACES
from support.trace_scripts import cases, scenarios

from lldb_trace import api
from lldb_trace.analysis import ThreadTimes
from lldb_trace.bundle.model import ClockInfo, CpuInfo
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.capture.encoder.thread_recorder import RecorderOptions, ThreadRecorder
from lldb_trace.capture.encoder.timing_packets import clock_info
from lldb_trace.decode import decode_thread_trace
from lldb_trace.decode.decoder_cpu import decoder_cpu
from lldb_trace.perf_data import load_perf_data
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.profile import profile
from lldb_trace.trace_files import load_trace

STATIC = TRACES / "static"
TID = 5668
START = 1_700_000_000_000  # ns


def instruction_time(index):
    """When instruction ``index`` ran: mostly a few ns apart, with slow stretches (a page fault, a syscall)."""
    stall = (index % 500 == 0) * 200_000 + (index % 700 == 0) * 12_000_000  # longer than 256 MTC periods
    slow = (index % 29 == 0) * 20_000 + (index % 13 == 0) * 700
    return START + index * 3 + (index * (index % 7)) % 11 + slow + stall


def _cumulative_times(count):
    return START + np.cumsum([instruction_time(i) - START for i in range(count)])


@pytest.fixture(scope="module")
def static_trace():
    bundle = load_trace(STATIC / "trace.json")
    return ProcessTrace(bundle, bundle.processes[0])


def _replay(process_trace, mtc_period, cycle_accurate):
    """The recorded flow written again with a clock reading the instruction count; the stream and readings."""
    truth = GroundTruth.read(STATIC / "ground_truth" / f"{TID}.txt").addresses
    times = _cumulative_times(len(truth) + 1)
    readings = []
    recorder = None

    def clock():
        readings.append(int(times[len(recorder.truth.addresses)]))
        return readings[-1]

    options = RecorderOptions(512, clock, mtc_period=mtc_period, cycle_accurate=cycle_accurate)
    recorder = ThreadRecorder(TID, truth[0], process_trace.expander.classifier, options)
    for address in truth[1:]:
        recorder.stepped(address)
    recorder.exited()
    return recorder.finish(), readings, times


def _decode(process_trace, stream, clock):
    cpu = decoder_cpu(CpuInfo("intel", 6, 85, 4, clock))
    return decode_thread_trace(stream, cpu, process_trace.image, process_trace.expander)


def _timestamps(decoded):
    part = decoded.parts[0]
    return list(part.tsc_items), list(part.tsc_values)


@pytest.mark.parametrize("mtc_period", [3, 9])  # 9: the TMA packet carries fewer crystal clock bits than MTC
def test_cycle_accurate_times_are_the_clock_readings(static_trace, mtc_period):
    stream, readings, times = _replay(static_trace, mtc_period, True)
    decoded = _decode(static_trace, stream, clock_info(mtc_period, True))
    assert decoded.error_count == 0 and decoded.instruction_count == 1182
    items, values = _timestamps(decoded)
    assert set(values) <= set(readings)  # nothing estimated wrongly: every time is a reading
    assert len(values) >= len(readings) // 3  # times at branch packets, not only at PSBs
    # Each time is read at an instruction between the item it is given to and the next item with a time: libipt
    # hands out a timing packet's time at the branch before it, or at the packet's own branch.
    taken_at = np.searchsorted(times, values)
    bounds = [*items[1:], decoded.item_count]
    assert all(item - 1 <= at <= bound + 1 for item, at, bound in zip(items, taken_at, bounds, strict=True))


def test_mtc_times_are_the_crystal_clock_edges_before_each_reading(static_trace):
    stream, readings, times = _replay(static_trace, 3, False)
    decoded = _decode(static_trace, stream, clock_info(3, False))
    items, values = _timestamps(decoded)
    period = 40 << 3  # TSC ticks per MTC period
    finer = [v for v in values if v not in readings]
    assert finer and all(v % period == 0 for v in finer)  # MTC edges between TSCs
    # An MTC's time is the crystal clock edge before the reading it stands for, so within one period of it.
    bounds = [*items[1:], decoded.item_count]
    for item, value, bound in zip(items, values, bounds, strict=True):
        assert times[max(item - 1, 0)] - period < value <= times[min(bound + 1, len(times) - 1)], item


def test_without_the_clock_settings_only_tsc_counts(static_trace):
    """The same stream decoded without the bundle's timing: MTC and CYC are ignored, times are the TSCs."""
    stream, readings, _ = _replay(static_trace, 3, True)
    coarse = _decode(static_trace, stream, None)
    fine = _decode(static_trace, stream, clock_info(3, True))
    coarse_values = _timestamps(coarse)[1]
    assert set(coarse_values) <= set(readings)
    assert len(coarse_values) < len(_timestamps(fine)[1]) / 2


def test_tsc_only_stream_is_unchanged_by_the_timing_option(static_trace):
    """--tsc alone writes no MTC/CYC/TMA/CBR: the stream is the same with a ClockInfo saying so."""
    stream, _, _ = _replay(static_trace, None, False)
    decoded = _decode(static_trace, stream, ClockInfo())
    assert decoded.error_count == 0


def test_thread_times_convert_like_perf(static_trace):
    stream, _, _ = _replay(static_trace, 3, True)
    decoded = _decode(static_trace, stream, clock_info(3, True))
    conversion = type("Conversion", (), {"time_mult": 1 << 10, "time_shift": 10, "time_zero": 5})()
    times = ThreadTimes(decoded, conversion)
    items, values = _timestamps(decoded)
    assert times.at(np.array(items)).tolist() == [v + 5 for v in values]
    assert times.unit == "ns" and times.updates == len(values)


# -- the cycle-accurate scenario, against Linux perf's own timed decode -------------------------------------------

CYCLES = TRACES / "cycles" / "trace.json"


def _times(bundle):
    process_trace = ProcessTrace(bundle, bundle.processes[0])
    [tid] = process_trace.tids
    decoded = process_trace.decoded(tid)
    return tid, decoded, ThreadTimes(decoded, bundle.tsc_conversion)


@pytest.fixture(scope="module")
def cycles_perf_data(tmp_path_factory):
    if not scenarios.modules_match(CYCLES):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    return cases.make("cycles", tmp_path_factory.mktemp("cycles"))


def test_perf_finds_the_same_times_in_the_same_packets(cycles_perf_data):
    """perf's decoder turns the TSC/TMA/MTC/CYC/CBR packets into times with AUXTRACE_INFO's ratios; the plugin
    into times with libipt and the same ratios: the times must be the same numbers (perf hands each out a few
    instructions later than libipt, so instruction-by-instruction they are not compared).  A few differ: perf
    starts with times from before the first TSC, and its CYC estimate is not libipt's at some MTCs (a few us;
    libipt's are the recorder's clock readings exactly, as the replay tests above show)."""
    tid, decoded, times = _times(load_perf_data(cycles_perf_data))
    reference = cases.read_references()["cycles"][str(tid)]
    theirs = set(cases.perf_times(cycles_perf_data)[tid] if shutil.which("perf") else reference["times"])
    ours = set(times.at(np.arange(decoded.item_count)).tolist())
    assert len(ours) > 300
    assert len(ours & theirs) >= 0.9 * len(ours)


def test_a_bundle_and_its_perf_data_have_the_same_clock_and_times(cycles_perf_data):
    bundle = load_trace(CYCLES)
    from_perf = load_perf_data(cycles_perf_data)
    assert bundle.cpu.clock == from_perf.cpu.clock == clock_info(9, True)
    _, decoded, times = _times(bundle)
    _, decoded_perf, times_perf = _times(from_perf)
    everything = np.arange(decoded.item_count)
    assert decoded.item_count == decoded_perf.item_count
    assert times.at(everything).tolist() == times_perf.at(everything).tolist()


# -- what fine timing gives profiles and exports ------------------------------------------------------------------


def test_a_profile_of_the_cycle_accurate_trace_spends_all_of_its_time():
    """Every nanosecond between the first and the last timestamp is some row's exclusive time, in each grouping,
    and with CYC timing nearly every function's time is known (only a few shorter than a time update are 0)."""
    if not scenarios.modules_match(CYCLES):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    thread = api.open_bundle(CYCLES.parent).threads[0]
    times = ThreadTimes(thread.decoded, thread.process_trace.bundle.tsc_conversion)
    span = int(times.at([thread.decoded.item_count])[0] - times.at([0])[0])
    for by in ("function", "line", "module"):
        made = profile(thread, by)
        assert made.time_unit == "ns" and sum(row.exclusive_time for row in made.rows) == span
    functions = profile(thread).rows
    assert sum(1 for row in functions if row.exclusive_time == 0) <= len(functions) // 10
