"""perf.data files that lie: every field that cannot be right is a one-line error naming its record, or a gap.

The inputs are the committed cases written as perf.data (test_traces/perf/cases.py),
each damaged in one place with support.perf_mutations' layout: a record written
twice or deleted, a task id no thread has, trace bytes without a PSB, time words
that overflow, an AUXTRACE_INFO shorter than its fields, a mapping past the
address space.  What a damaged file still holds must decode exactly as the
undamaged one does, and what it lost must be a gap that ``trace dump`` reports.
"""

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.perf_layout import AUXTRACE, PerfLayout, Record
from support.perf_mutations import AUXTRACE_INFO, seed_files

from lldb_trace.analysis.times import ThreadTimes
from lldb_trace.decode import DATA_LOST, Gap
from lldb_trace.decode.cursor import walk
from lldb_trace.perf.auxtrace import AuxtraceBuffer
from lldb_trace.perf_data import PerfDataError
from lldb_trace.perf_data.aux_streams import join_streams
from lldb_trace.perf_data.reader import Recording
from lldb_trace.perf_data.sideband_records import AuxNotice
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

COMM, ITRACE_START, MMAP2, AUX = 3, 12, 10, 11
TIME_SHIFT, TIME_MULT, TIME_ZERO, MTC_FREQ_BITS = 1, 2, 3, 11  # AUXTRACE_INFO priv words


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    found = seed_files(tmp_path_factory.mktemp("seeds"))
    if not found:
        pytest.skip("this machine's libraries are not the ones the committed traces ran")
    return found


def written(tmp_path, layout, name="damaged.perf.data"):
    path = tmp_path / name
    path.write_bytes(layout.pack())
    return path


def decoded_items(path):
    """``{tid: [address or ("gap", code, text)]}``: every thread's whole decode, forwards."""
    bundle = load_trace(path)
    found = {}
    for process in bundle.processes:
        trace = ProcessTrace(bundle, process)
        for tid in trace.tids:
            decoded = trace.decoded(tid)
            walked = walk(decoded, 0, True, trace.expander) if decoded is not None else ()
            found[tid] = [("gap", v.code, v.text) if isinstance(v, Gap) else v for _, v in walked]
    return found


def gaps(items):
    return [item for item in items if isinstance(item, tuple)]


def set_word(layout, index, word, value):
    struct.pack_into("<Q", layout.records[index].raw, 16 + 8 * word, value)


def first(layout, kind):
    return layout.indices(kind)[0]


def auxtrace_of(layout, key_offset, key):
    """The index of the AUXTRACE record whose u32 at ``key_offset`` (36: tid, 40: cpu) is ``key``."""
    return next(
        k for k in layout.indices(AUXTRACE) if struct.unpack_from("<I", layout.records[k].raw, key_offset)[0] == key
    )


# -- records written twice or not at all ----------------------------------------------------------------------


@pytest.mark.parametrize("case", ["percpu", "threads"])
def test_an_auxtrace_record_written_twice_decodes_once(tmp_path, seeds, case):
    original = decoded_items(written(tmp_path, PerfLayout.parse(seeds[case]), "original.perf.data"))
    layout = PerfLayout.parse(seeds[case])
    k = first(layout, AUXTRACE)
    layout.records.insert(k + 1, Record(bytearray(layout.records[k].raw), layout.records[k].trace))
    assert decoded_items(written(tmp_path, layout)) == original  # per cpu it was decoded twice, with no error


def test_a_per_cpu_auxtrace_record_deleted_is_a_gap_in_the_threads_that_ran_there(tmp_path, seeds):
    original = decoded_items(written(tmp_path, PerfLayout.parse(seeds["percpu"]), "original.perf.data"))
    layout = PerfLayout.parse(seeds["percpu"])
    del layout.records[auxtrace_of(layout, 40, 0)]  # cpu 0's data; its AUX record stays
    (aux,) = [k for k in layout.indices(AUX) if struct.unpack_from("<Q", layout.records[k].raw, 16)[0] == 3265]
    at = record_offset(layout, aux)  # the mmap records before it name the checkout's path, so it moves
    found = decoded_items(written(tmp_path, layout))
    assert found.keys() == original.keys()
    hit = [tid for tid, items in found.items() if gaps(items)]
    assert hit and len(hit) < len(found)  # the threads that ran on cpu 1 only lost nothing
    for tid in found:
        reasons = {text for _, code, text in gaps(found[tid])}
        if tid in hit:
            assert {code for _, code, _ in gaps(found[tid])} == {DATA_LOST}
            assert reasons == {f"3265 bytes of trace data announced by the AUX record at byte {at} are in no AUXTRACE "
                               "record (perf stopped before saving them, or the file is damaged)"}  # fmt: skip
            assert len(found[tid]) - len(gaps(found[tid])) < len(original[tid])
        else:
            assert found[tid] == original[tid]
    info = cli_dump(written(tmp_path, layout))  # the main thread's
    assert f"data lost at trace byte 0: 3265 bytes of trace data announced by the AUX record at byte {at}" in info


def test_a_per_thread_auxtrace_record_deleted_leaves_its_thread_with_a_gap(tmp_path, seeds):
    layout = PerfLayout.parse(seeds["threads"])
    del layout.records[auxtrace_of(layout, 36, 5675)]
    found = decoded_items(written(tmp_path, layout))
    assert sorted(found) == [5674, 5675, 5676, 5677]
    assert [(kind, code) for kind, code, _ in found[5675]] == [("gap", DATA_LOST)]
    assert "are in no AUXTRACE record" in found[5675][0][2]
    assert all(not gaps(found[tid]) for tid in (5674, 5676, 5677))
    info = cli_dump(written(tmp_path, layout), "-t", "5675")
    assert f"data lost at trace byte 0: {found[5675][0][2]}" in info


def test_truncated_aux_records_by_the_ten_thousand_place_each_loss_in_one_search():
    """60,000 buffers each flagged TRUNCATED (the fault campaign's 7.2 MB file took 65-75 s to load)."""
    count, size = 60_000, 8
    data = bytes(range(256)) * (count * size // 256)
    buffers = [AuxtraceBuffer(k * size, size, k * size, 0, 0, 7, None, k * size) for k in range(count)]
    notices = [AuxNotice(None, 7, k * size, size, 1 if k % 2 else 0, k) for k in range(count)]
    recording = Recording("f", data, _per_thread_info(), buffers=buffers, aux=notices)
    (stream,) = join_streams(recording).values()
    assert len(stream) == count * size
    assert [b.offset for b in stream.breaks] == [(k + 1) * size for k in range(1, count, 2)]


def _per_thread_info():
    from lldb_trace.perf.auxtrace import IntelPtInfo

    return IntelPtInfo(pmu_type=8, time_shift=0, time_mult=1, time_zero=0, cap_user_time_zero=0)


# -- fields no thread, clock or mapping can have --------------------------------------------------------------


def test_the_idle_task_is_no_thread_and_an_impossible_tid_is_an_error(tmp_path, seeds):
    layout = PerfLayout.parse(seeds["threads"])
    for kind in (COMM, ITRACE_START):
        struct.pack_into("<I", layout.records[first(layout, kind)].raw, 12, 0)  # tid 0: the idle task
    bundle = load_trace(written(tmp_path, layout))
    assert sorted(t.tid for t in bundle.processes[0].threads) == [5674, 5675, 5676, 5677]
    k = first(layout, ITRACE_START)
    struct.pack_into("<I", layout.records[k].raw, 12, 0xFFFFFFFE)
    offset = record_offset(layout, k)
    message = load_error(written(tmp_path, layout, "impossible.perf.data"))
    assert f"the ITRACE_START record at byte {offset} names tid 4294967294, which no Linux task can have" in message


def test_trace_data_without_a_psb_is_a_gap_that_says_so(tmp_path, seeds):
    layout = PerfLayout.parse(seeds["basic"])
    record = layout.records[first(layout, AUXTRACE)]
    record.trace = record.trace.replace(bytes.fromhex("0282") * 8, bytes(16))
    (items,) = decoded_items(written(tmp_path, layout)).values()
    assert [(kind, code) for kind, code, _ in items] == [("gap", DATA_LOST)]
    assert items[0][2] == f"the {len(record.trace)} bytes of trace data hold no PSB packet, where decoding starts: " \
        "none of it can be decoded"  # fmt: skip


@pytest.mark.parametrize(
    ("case", "word", "value", "says"),
    [
        ("timestamps", TIME_MULT, 0, "its time_mult is 0, outside 1..4294967295"),
        ("timestamps", TIME_SHIFT, 64, "its time_shift is 64, outside 0..63"),
        ("percpu", TIME_SHIFT, (1 << 64) - 1, "its time_shift is 18446744073709551615, outside 0..63"),
        ("cycles", MTC_FREQ_BITS, (1 << 64) - 1, "its mtc_freq_bits gives an MTC period of"),
    ],
)
def test_time_words_that_cannot_be_right_name_the_auxtrace_info_record(tmp_path, seeds, case, word, value, says):
    layout = PerfLayout.parse(seeds[case])
    k = first(layout, AUXTRACE_INFO)
    set_word(layout, k, word, value)
    message = load_error(written(tmp_path, layout))
    assert f"the AUXTRACE_INFO record at byte {record_offset(layout, k)}: {says}" in message


def test_a_time_zero_past_two_to_the_63_wraps_as_in_perf(tmp_path, seeds):
    layout = PerfLayout.parse(seeds["timestamps"])
    set_word(layout, first(layout, AUXTRACE_INFO), TIME_ZERO, (1 << 64) - 1000)
    bundle = load_trace(written(tmp_path, layout))
    trace = ProcessTrace(bundle, bundle.processes[0])
    times = ThreadTimes(trace.decoded(trace.tids[0]), bundle.tsc_conversion)
    conversion = bundle.tsc_conversion
    tsc = np.frombuffer(trace.decoded(trace.tids[0]).parts[0].tsc_values, dtype=np.uint64)
    expected = [(conversion.to_ns(int(value)) + (1 << 63)) % (1 << 64) - (1 << 63) for value in tsc]
    assert times.known and list(times._values) == expected


@pytest.mark.parametrize("size", [8, 12])
def test_an_auxtrace_info_shorter_than_its_fields_is_one_line_everywhere(tmp_path, seeds, size):
    layout = PerfLayout.parse(seeds["basic"])
    k = first(layout, AUXTRACE_INFO)
    struct.pack_into("<H", layout.records[k].raw, 6, size)
    path = written(tmp_path, layout)
    expected = f"the AUXTRACE_INFO record at byte {record_offset(layout, k)} is {size} bytes, too short for its fields"
    assert expected in load_error(path)
    done = subprocess.run([str(Path(sys.executable).parent / "lldb-trace"), "dump", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0 and expected in done.stderr and "Traceback" not in done.stderr + done.stdout


def test_a_mapping_past_the_address_space_is_an_error(tmp_path, seeds):
    layout = PerfLayout.parse(seeds["basic"])
    k = first(layout, MMAP2)
    struct.pack_into("<Q", layout.records[k].raw, 24, (1 << 64) - 0x1000)  # its length
    message = load_error(written(tmp_path, layout))
    assert f"the MMAP2 record at byte {record_offset(layout, k)} maps {(1 << 64) - 0x1000} bytes at 0x" in message
    assert "past the end of the address space" in message


# -- the same files in the debugger ---------------------------------------------------------------------------


@pytest.fixture
def bad_clocks(tmp_path, seeds):
    """A timed file whose time_shift and a cycle-accurate one whose mtc_freq_bits are all ones."""
    paths = []
    for case, word in (("timestamps", TIME_SHIFT), ("cycles", MTC_FREQ_BITS)):
        layout = PerfLayout.parse(seeds[case])
        set_word(layout, first(layout, AUXTRACE_INFO), word, (1 << 64) - 1)
        paths.append(written(tmp_path, layout, f"{case}.perf.data"))
    return paths


def test_garbled_clocks_are_a_load_error_in_the_pip_lldb(tmp_path, bad_clocks):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        for path in bad_clocks:
            result = session.handle(f"pt load {path}")
            error = result.GetError().strip()
            assert not result.Succeeded() and "\n" not in error and "the AUXTRACE_INFO record at byte" in error
            assert session.debugger.GetNumTargets() == 0
    finally:
        session.close()


@needs_lldb_22
def test_garbled_clocks_are_a_load_error_in_lldb_22(tmp_path, bad_clocks):
    for path in bad_clocks:
        done = run_lldb_22(tmp_path, [f"trace load {path}", "trace dump"])
        text = done.stdout + done.stderr
        assert "the AUXTRACE_INFO record at byte" in text
        assert "Traceback" not in text and "internal error" not in text.lower() and "MemoryError" not in text


# -- helpers --------------------------------------------------------------------------------------------------


def record_offset(layout, index):
    """Where record ``index`` starts in the packed file."""
    start = struct.unpack_from("<Q", layout.head, 40)[0]
    return start + sum(len(r.raw) + len(r.trace) for r in layout.records[:index])


def load_error(path):
    with pytest.raises(PerfDataError) as error:
        load_trace(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def cli_dump(path, *options):
    """What ``lldb-trace dump`` prints: the session info of the default thread (``-t TID``: another)."""
    done = subprocess.run([str(Path(sys.executable).parent / "lldb-trace"), "dump", *options, str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
