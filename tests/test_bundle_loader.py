"""The bundle loader on good bundles in both formats and on a table of broken ones."""

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from support.bundle_cases import CASES, STATIC, TID, break_bundle, make_good_bundle, to_rfc
from support.paths import TRACES

from lldb_trace.bundle import BundleError
from lldb_trace.bundle.loader import DEFAULT_KERNEL_LOAD_ADDRESS
from lldb_trace.elf_info import ElfInfo
from lldb_trace.perf_data import PerfDataError
from lldb_trace.trace_files import load_trace

COMMITTED = sorted(p.parent.name for p in TRACES.glob("*/trace.json"))


class LoadHungError(Exception):
    """The loader blocked (on a named pipe, say) instead of refusing the bundle."""


def _hung(_signum, _frame):
    raise LoadHungError("load_trace did not return within 60 s")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_broken_bundle_is_one_line_naming_the_fault(tmp_path, case):
    path, expected = break_bundle(tmp_path, case)
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)  # a loader that opens a named pipe would block forever: fail instead
    try:
        with pytest.raises(BundleError) as caught:
            load_trace(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    message = str(caught.value)
    assert "\n" not in message
    assert expected in message, message


def test_table_has_enough_cases():
    assert len(CASES) >= 25


def _load_as_nobody(path):
    """What loading ``path`` says in a child that dropped to 'nobody' (as root every file is readable)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        try:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            load_trace(path)
            os.write(write, b"loaded")
        except BaseException as error:
            os.write(write, f"{type(error).__name__}: {error}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(child, 0)
    return message


def test_unreadable_bundle_is_reported(tmp_path):
    folder = Path(tempfile.mkdtemp())
    try:
        path = make_good_bundle(folder)
        folder.chmod(0o755)
        path.chmod(0)
        assert _load_as_nobody(path) == f"BundleError: {path}: permission denied: make the bundle readable (chmod +r)"
        # in a folder closed to the user (lldb-trace record makes its folder so): an internal PermissionError was
        # reported, from looking whether the path is a folder
        path.chmod(0o644)
        folder.chmod(0o700)
        for given in (path, folder):
            assert _load_as_nobody(given) == (
                f"BundleError: {path} cannot be reached: permission denied on a folder on its way (chmod +x the folder)"
            )
    finally:
        shutil.rmtree(folder)


PERF_MAGICS = {
    b"PERFILE2": "its header says it is 0 bytes, less than perf's 104: it is damaged",
    b"2ELIFREP": "a perf.data written on a big-endian machine",
    b"PERFFILE": "a version 1 perf.data (PERFFILE)",
}


@pytest.mark.parametrize("magic", PERF_MAGICS)
def test_a_perf_data_file_is_read_as_one_whatever_its_name(tmp_path, magic):
    """Known by its magic, before anything reads it as JSON; its problems are perf.data's (tests/test_perf_data.py)."""
    path = tmp_path / "trace.json"
    path.write_bytes(magic + bytes(200))
    with pytest.raises(PerfDataError) as raised:
        load_trace(path)
    assert str(raised.value).startswith(f"{path}: {PERF_MAGICS[magic]}")


def test_missing_bundle_file(tmp_path):
    with pytest.raises(BundleError, match=r"absent\.json: no such bundle file$"):
        load_trace(tmp_path / "absent.json")


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_bundles_load_with_their_values(name):
    folder = TRACES / name
    document = json.loads((folder / "trace.json").read_text())
    bundle = load_trace(folder / "trace.json")
    assert bundle.format == "intel-pt-lldb"
    [process] = bundle.processes
    assert process.pid == document["processes"][0]["pid"]
    assert [t.tid for t in process.threads] == [t["tid"] for t in document["processes"][0]["threads"]]
    for thread, declared in zip(process.threads, document["processes"][0]["threads"], strict=True):
        assert thread.trace == (folder / declared["iptTrace"] if "iptTrace" in declared else None)
    assert [cpu.cpu_id for cpu in bundle.cpus] == [cpu["id"] for cpu in document.get("cpus", [])]
    for module, declared in zip(process.modules, document["processes"][0]["modules"], strict=True):
        assert module.load_address == int(declared["loadAddress"], 16)
        assert module.path == folder / declared.get("file", declared["systemPath"])
        assert module.build_id == ElfInfo(module.path).build_id


def test_rfc_format_gives_the_same_model(tmp_path):
    native = load_trace(make_good_bundle(tmp_path / "native"))
    rfc = load_trace(make_good_bundle(tmp_path / "rfc", rfc=True))
    assert rfc.format == "intel-pt" and native.format == "intel-pt-lldb"
    assert rfc.cpu == native.cpu
    assert [(p.pid, [t.tid for t in p.threads], [m.load_address for m in p.modules]) for p in rfc.processes] == [
        (p.pid, [t.tid for t in p.threads], [m.load_address for m in p.modules]) for p in native.processes
    ]


@pytest.mark.parametrize("address", [0x400000, "4194304", "0x400000", "0X400000"])
def test_load_address_forms(tmp_path, address):
    path = make_good_bundle(tmp_path)
    document = json.loads(path.read_text())
    document["processes"][0]["modules"][0]["loadAddress"] = address
    path.write_text(json.dumps(document))
    assert load_trace(path).processes[0].modules[0].load_address == 0x400000


def test_paths_absolute_or_relative_and_system_path_fallback(tmp_path):
    path = make_good_bundle(tmp_path / "bundle")
    document = json.loads(path.read_text())
    module = document["processes"][0]["modules"][0]
    module.pop("file")
    module["systemPath"] = str(path.parent / "modules" / "static")  # absolute, used when 'file' is absent
    document["processes"][0]["threads"][0]["iptTrace"] = str(path.parent / "traces" / f"{TID}.ipt")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(document))
    bundle = load_trace(elsewhere)
    assert bundle.processes[0].modules[0].path == path.parent / "modules" / "static"
    assert bundle.processes[0].threads[0].trace == path.parent / "traces" / f"{TID}.ipt"


def test_uuid_in_lldb_spelling_is_accepted(tmp_path):
    path = make_good_bundle(tmp_path)
    document = json.loads(path.read_text())
    build_id = ElfInfo(STATIC / "modules" / "static").build_id
    spelled = "-".join([build_id[:8], build_id[8:12], build_id[12:16], build_id[16:20], build_id[20:32], build_id[32:]])
    document["processes"][0]["modules"][0]["uuid"] = spelled.upper()
    path.write_text(json.dumps(document))
    assert load_trace(path).processes[0].modules[0].build_id == build_id


def test_folder_path_loads_its_trace_json(tmp_path):
    make_good_bundle(tmp_path)
    assert load_trace(tmp_path).path == tmp_path / "trace.json"


def test_rfc_time_conversion_and_kernel(tmp_path):
    path = make_good_bundle(tmp_path)
    document = to_rfc(json.loads(path.read_text()))
    document["trace"]["tscPerfZeroConversion"] = {"timeMult": 3, "timeShift": 1, "timeZero": "100"}
    path.write_text(json.dumps(document))
    conversion = load_trace(path).tsc_conversion
    assert conversion.to_ns(10) == 100 + (10 * 3 >> 1)
    native = json.loads((STATIC / "trace.json").read_text())
    native["kernel"] = {"file": str(STATIC / "modules" / "static")}
    path.write_text(json.dumps(native))
    assert load_trace(path).kernel.load_address == DEFAULT_KERNEL_LOAD_ADDRESS


def test_tsc_conversion_matches_perf_formula_for_large_values():
    from lldb_trace.bundle import TscConversion

    conversion = TscConversion(time_mult=1_234_567, time_shift=21, time_zero=10**18)
    tsc = 0xFFFF_FFFF_FFFF
    assert conversion.to_ns(tsc) == 10**18 + (tsc * 1_234_567 >> 21)


def test_a_kernel_bundle_needs_no_processes(tmp_path):
    """'processes' is required only when 'kernel' is not provided (native LLDB's rule); both forms load."""
    path = make_good_bundle(tmp_path)
    native = json.loads(path.read_text())
    kernel = {"file": "modules/static"}
    for document in ({"type": "intel-pt", "cpuInfo": native["cpuInfo"], "kernel": kernel}, {**native, "processes": []}):
        document.setdefault("kernel", kernel)
        path.write_text(json.dumps(document))
        bundle = load_trace(path)
        assert bundle.processes == () and bundle.kernel.path == tmp_path / "modules" / "static"


def test_modules_side_by_side_and_ids_at_their_bounds_load(tmp_path):
    path = make_good_bundle(tmp_path)
    document = json.loads(path.read_text())
    module = document["processes"][0]["modules"][0]
    span = ElfInfo(STATIC / "modules" / "static").load_span
    after = (0x400000 + span + 0xFFF) & ~0xFFF  # the next page after the first copy: touching, not overlapping
    top = (1 << 64) - ((span + 0xFFF) & ~0xFFF)  # the last pages of the address space
    document["processes"][0]["modules"] += [{**module, "loadAddress": hex(after)}, {**module, "loadAddress": top}]
    document["processes"][0]["pid"] = document["processes"][0]["threads"][0]["tid"] = 2**31 - 1
    path.write_text(json.dumps(document))
    process = load_trace(path).processes[0]
    assert [m.load_address for m in process.modules] == [0x400000, after, top]
    assert process.pid == process.threads[0].tid == 2**31 - 1
