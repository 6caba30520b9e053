"""perf.data files: the plugin's decode against Linux perf's, round trips, lost data, binaries, bad files.

The inputs are the committed bundles' genuine PT streams written as perf.data
by lldb_trace's writer (test_traces/perf/cases.py, which also holds how the
references were captured).  Linux perf (``perf script --itrace=i0nsZ``) is
the independent decoder: run live where it is installed, else its committed
answers (test_traces/perf/references.json) stand in.
"""

import shutil
import struct
import sys

import pytest
from support.paths import TRACES
from support.trace_scripts import cases, scenarios

from lldb_trace.bundle.saver import SaveModule, SaveProcess, SaveThread
from lldb_trace.decode import DATA_LOST, Gap
from lldb_trace.decode.cursor import walk
from lldb_trace.perf_data import BinarySearch, PerfDataError, load_perf_data, perf_data_bytes
from lldb_trace.perf_data.writer import CpuStream
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

HAVE_PERF = shutil.which("perf") is not None


def items(bundle, tid, process=None):
    """Everything a walk forwards gives: instruction addresses, and ``("gap", code)`` for gaps."""
    trace = ProcessTrace(bundle, process or bundle.processes[0])
    decoded = trace.decoded(tid)
    return [("gap", v.code) if isinstance(v, Gap) else v for _, v in walk(decoded, 0, True, trace.expander)]


def instructions(found):
    return [v for v in found if not isinstance(v, tuple)]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """``made(case)``: the case's perf.data, written once; skipped where its bundle's libraries differ."""
    folder = tmp_path_factory.mktemp("perf-cases")
    paths = {}

    def get(case):
        if not scenarios.modules_match(cases.source_bundle(case)):
            pytest.skip(f"{case}: this machine's libraries are not the ones the committed trace ran")
        if case not in paths:
            paths[case] = cases.make(case, folder)
        return paths[case]

    return get


@pytest.mark.parametrize("case", ["basic", "threads", "timestamps", "cycles", "truncated"])
def test_the_plugin_decodes_each_thread_as_linux_perf_does(made, case):
    path = made(case)
    bundle = load_trace(path)
    reference = cases.read_references()[case]
    live = cases.perf_script(path) if HAVE_PERF else None
    assert sorted(int(tid) for tid in reference) == sorted(t.tid for t in bundle.processes[0].threads)
    for thread in bundle.processes[0].threads:
        ours = instructions(items(bundle, thread.tid))
        assert len(ours) == reference[str(thread.tid)]["count"]
        assert cases.digest(ours) == reference[str(thread.tid)]["sha256"]
        if live is not None:
            assert ours == live[thread.tid]


def test_a_truncated_aux_buffer_is_one_gap_where_the_data_was_lost(made):
    """Before the loss: the recorded flow's start; after it: decoding resumes at the next PSB, as perf does."""
    original = items(load_trace(cases.source_bundle("basic")), 5662)
    found = items(load_trace(made("truncated")), 5662)
    gaps = [k for k, v in enumerate(found) if isinstance(v, tuple)]
    assert [found[k] for k in gaps] == [("gap", DATA_LOST)]
    before, after = found[: gaps[0]], found[gaps[0] + 1 :]
    assert before == original[: len(before)] and after == original[-len(after) :]
    assert len(before) + len(after) < len(original)  # what ran while the data was lost is not made up


def test_overlapping_snapshots_join_and_a_later_one_starts_after_a_gap(made):
    original = items(load_trace(cases.source_bundle("basic")), 5662)
    found = items(load_trace(made("snapshot")), 5662)
    gaps = [k for k, v in enumerate(found) if isinstance(v, tuple)]
    assert [found[k] for k in gaps] == [("gap", DATA_LOST)]
    joined, last = found[: gaps[0]], found[gaps[0] + 1 :]
    assert joined == original[: len(joined)]  # the second snapshot continued the first, byte for byte
    assert last == original[-len(last) :]
    # perf finds no overlap without a PSB inside it, so it resumes at the second snapshot's first PSB:
    # what it decodes is the plugin's decode with one stretch left out, never another path.
    theirs = [int(ip, 16) for ip in cases.read_references()["snapshot"]["5662"]["ips"]]
    ours = instructions(found)
    head = next(k for k, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b)
    tail = len(theirs) - head
    assert theirs[:head] == ours[:head] and theirs[head:] == ours[-tail:]
    if HAVE_PERF:
        assert cases.perf_script(made("snapshot"))[5662] == theirs


def test_a_per_cpu_perf_data_splits_among_threads_as_its_bundle_does(made):
    json_bundle = load_trace(cases.source_bundle("percpu"))
    perf_bundle = load_trace(made("percpu"))
    assert perf_bundle.cpus and perf_bundle.tsc_conversion == json_bundle.tsc_conversion
    tids = sorted(t.tid for t in json_bundle.processes[0].threads)
    assert sorted(t.tid for t in perf_bundle.processes[0].threads) == tids
    for tid in tids:
        assert items(perf_bundle, tid) == items(json_bundle, tid)


ROUND_TRIP = ["basic", "threads", "static", "crash", "overflow", "snapshot", "timestamps", "cycles", "missing-module"]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_a_bundle_written_as_perf_data_loads_back_identically(tmp_path, name):
    bundle_path = TRACES / name / "trace.json"
    if not scenarios.modules_match(bundle_path):
        pytest.skip("this machine's libraries are not the ones the committed trace ran")
    bundle = load_trace(bundle_path)
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process)
    saved = SaveProcess(
        process.pid,
        process.triple,
        tuple(SaveThread(tid, trace.trace_bytes(tid)) for tid in trace.tids),
        tuple(SaveModule(m.system_path, m.path, m.load_address, m.build_id or m.uuid) for m in process.modules),
    )
    path = tmp_path / "out.perf.data"
    path.write_bytes(perf_data_bytes(saved, bundle.cpu, bundle.tsc_conversion))
    again = load_trace(path)
    assert again.format == "perf.data" and again.cpu == bundle.cpu
    assert again.tsc_conversion == bundle.tsc_conversion
    loaded = again.processes[0]
    assert loaded.pid == process.pid and not loaded.missing_modules
    assert [(m.load_address, m.build_id) for m in loaded.modules] == [
        (m.load_address, m.build_id) for m in process.modules
    ]
    for tid in trace.tids:
        assert items(again, tid) == items(bundle, tid)


def test_saving_a_perf_data_with_lost_data_keeps_the_loss(made, tmp_path):
    loaded = load_trace(made("truncated"))
    trace = ProcessTrace(loaded, loaded.processes[0])
    threads = tuple(SaveThread(t, bytes(trace.trace_bytes(t)), None, trace.source.breaks(t)) for t in trace.tids)
    modules = tuple(SaveModule(m.system_path, m.path, m.load_address, m.build_id) for m in loaded.processes[0].modules)
    path = tmp_path / "again.perf.data"
    path.write_bytes(perf_data_bytes(SaveProcess(loaded.processes[0].pid, "x", threads, modules), loaded.cpu))
    assert items(load_trace(path), 5662) == items(loaded, 5662)


# -- where binaries are found ------------------------------------------------------------------------


@pytest.fixture
def moved(tmp_path):
    """A perf.data naming the program at a path that no longer holds it; ``(perf.data, the binary, build-id)``."""
    bundle = load_trace(TRACES / "static" / "trace.json")
    process = bundle.processes[0]
    recorded = tmp_path / "recorded" / "static"
    recorded.parent.mkdir()
    shutil.copy(process.modules[0].path, recorded)
    trace = ProcessTrace(bundle, process)
    module = process.modules[0]
    saved = SaveProcess(
        process.pid,
        process.triple,
        tuple(SaveThread(tid, trace.trace_bytes(tid)) for tid in trace.tids),
        (SaveModule("/nonexistent/static", recorded, module.load_address, module.build_id),),
    )
    path = tmp_path / "moved.perf.data"
    path.write_bytes(perf_data_bytes(saved, bundle.cpu))
    binary = tmp_path / "elsewhere" / "static"
    binary.parent.mkdir()
    recorded.rename(binary)
    return path, binary, module.build_id, str(recorded)


def test_a_missing_binary_is_named_and_its_code_is_a_gap(moved):
    path, _, build_id, recorded = moved
    bundle = load_perf_data(path, BinarySearch())
    process = bundle.processes[0]
    assert not process.modules and [(m.system_path, m.build_id) for m in process.missing_modules] == [
        (recorded, build_id)
    ]
    trace = ProcessTrace(bundle, process)
    decoded = trace.decoded(trace.tids[0])
    assert decoded.instruction_count == 0
    assert any(f"no binary for {recorded}" in gap.text for part in decoded.parts for gap in part.gaps)


def test_binaries_are_found_by_search_path_sysroot_and_build_id_cache(moved, tmp_path):
    path, binary, build_id, recorded = moved
    found = load_perf_data(path, BinarySearch(search_paths=(binary.parent,)))
    assert [m.path for m in found.processes[0].modules] == [binary]
    root = tmp_path / "root"
    (root / recorded.lstrip("/")).parent.mkdir(parents=True)
    shutil.copy(binary, root / recorded.lstrip("/"))
    assert load_perf_data(path, BinarySearch(sysroots=(root,))).processes[0].modules
    cache = tmp_path / "cache"
    by_id = cache / ".build-id" / build_id[:2] / build_id[2:]
    by_id.mkdir(parents=True)
    shutil.copy(binary, by_id / "elf")
    assert load_perf_data(path, BinarySearch(cache=cache)).processes[0].modules[0].path == by_id / "elf"


def test_a_binary_with_another_build_id_is_passed_over(moved):
    path, binary, _, recorded = moved
    shutil.copy(sys.executable if not shutil.which("true") else shutil.which("true"), recorded)
    bundle = load_perf_data(path, BinarySearch(search_paths=(binary.parent,)))
    assert [m.path for m in bundle.processes[0].modules] == [binary]  # not the other program at the path


# -- bad files --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return cases.make("basic", tmp_path_factory.mktemp("good")).read_bytes()


def _patched(data, offset, fmt, value):
    data = bytearray(data)
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


def _data_section(data):
    return struct.unpack_from("<QQ", data, 40)


def _auxtrace_offset(data):
    start, size = _data_section(data)
    offset = start
    while offset < start + size:
        kind, _, length = struct.unpack_from("<IHH", data, offset)
        if kind == 71:
            return offset
        offset += length
    raise AssertionError("no AUXTRACE record")


BAD = {
    "not an Intel PT recording": (lambda d: _cycles_only(), "no Intel PT trace (its events: cycles)"),
    "truncated mid-record": (lambda d: d[: _data_section(d)[0] + 200], "runs past the end of the file"),
    "AUXTRACE past the end": (
        lambda d: _patched(d, _auxtrace_offset(d) + 8, "<Q", 1 << 40),
        "bytes of trace follow, past the end of the data",
    ),
    "unknown feature bit": (lambda d: _patched(d, 72 + 12, "<B", 1), "feature bit 96, unknown to lldb_trace"),
    "newer header": (lambda d: _patched(d, 8, "<Q", 112), "its header is 112 bytes, not 104"),
    "pipe mode": (lambda d: b"PERFILE2" + struct.pack("<Q", 16) + d[200:400], "pipe-mode perf.data"),
    "big-endian": (lambda d: b"2ELIFREP" + d[8:], "big-endian machine"),
    "version 1": (lambda d: b"PERFFILE" + d[8:], "version 1 perf.data"),
    "empty data": (lambda d: _patched(d, 48, "<Q", 0), "its data section is empty"),
    "header only": (lambda d: d[:60], "ends inside its 104-byte header"),
    "compressed": (lambda d: _patched(d, _auxtrace_offset(d), "<I", 81), "compressed (perf record -z)"),
}


def _cycles_only():
    from lldb_trace.perf import attr as perf_attr
    from lldb_trace.perf_data import writer

    event = perf_attr.perf_event_attr(type=0, config=0, size=writer.ATTR_SIZE, sample_type=writer.SAMPLE_TYPE)
    event.sample_id_all = 1
    comm = writer._task_record(3, 1, 1, b"prog\0\0\0\0")
    return writer._file(((event, 1),), comm, {})


@pytest.mark.parametrize("case", BAD)
def test_a_bad_perf_data_is_one_line_saying_what_is_wrong(tmp_path, good, case):
    make, expected = BAD[case]
    path = tmp_path / "bad.data"
    path.write_bytes(make(good))
    with pytest.raises(PerfDataError) as error:
        load_trace(path)
    message = str(error.value)
    assert expected in message and "\n" not in message and message.startswith(str(path))


def test_garbage_trace_bytes_decode_to_error_items(tmp_path, good):
    """AUXTRACE bytes of random data: the load works and decoding yields gaps, never a crash."""
    import random

    offset = _auxtrace_offset(good) + 48
    size = struct.unpack_from("<Q", good, offset - 40)[0]
    for seed in range(5):
        noise = random.Random(seed).randbytes(size)
        path = tmp_path / f"noise{seed}.data"
        path.write_bytes(good[:offset] + noise + good[offset + size :])
        bundle = load_trace(path)
        trace = ProcessTrace(bundle, bundle.processes[0])
        decoded = trace.decoded(trace.tids[0])
        assert decoded is None or decoded.item_count >= 0


def test_a_per_cpu_file_without_tsc_conversion_is_refused(tmp_path):
    bundle = load_trace(cases.source_bundle("percpu"))
    streams = [CpuStream(c.cpu_id, c.read_trace(), ()) for c in bundle.cpus]
    process = bundle.processes[0]
    saved = SaveProcess(process.pid, process.triple, tuple(SaveThread(t.tid, None) for t in process.threads), ())
    path = tmp_path / "percpu.data"
    path.write_bytes(perf_data_bytes(saved, bundle.cpu, None, streams))
    with pytest.raises(PerfDataError, match="without TSC conversion"):
        load_trace(path)
