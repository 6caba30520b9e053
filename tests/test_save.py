"""trace save: a trace (loaded or live) written as a native bundle that loads again, elsewhere and in native lldb-22."""

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.committed_bundles import loadable  # noqa: E402
from support.launching import launchable  # noqa: E402
from support.lldb_session import Session  # noqa: E402

import lldb_trace.api as pt  # noqa: E402
from lldb_trace.bundle.model import CpuInfo  # noqa: E402
from lldb_trace.bundle.saver import SaveError, SaveModule, SaveProcess, SaveThread, save_bundle  # noqa: E402
from lldb_trace.trace_files import load_trace  # noqa: E402


def dumps(bundle, tmp_path, name):
    session = Session(tmp_path / name)
    try:
        session.ok(f"pt load {bundle}")
        return session.ok("pt dump -i --all"), session.ok("pt dump -C --all")
    finally:
        session.close()


def test_saved_bundle_with_copied_images_loads_without_the_originals(tmp_path):
    source = tmp_path / "original"
    shutil.copytree(TRACES / "crash", source)
    loadable(source)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    session = Session(tmp_path / "a")
    try:
        session.ok(f"pt load {source / 'trace.json'}")
        before = session.ok("pt dump -i --all"), session.ok("pt dump -C --all")
        session.ok(f"trace save {tmp_path / 'saved'} --copy-images")
        session.handle(f"trace save {tmp_path / 'saved'} --copy-images")
        _, err = session.streams()
        assert "already exists" in err and "add --force" in err
    finally:
        session.close()
    shutil.rmtree(source / "modules")  # the program's copy in the original bundle is gone
    document = json.loads((tmp_path / "saved" / "trace.json").read_text())
    assert all(m["file"].startswith("modules/") for m in document["processes"][0]["modules"])
    copied = json.loads((tmp_path / "saved" / "copied_images.json").read_text())
    assert set(copied) == {m["systemPath"] for m in document["processes"][0]["modules"]}
    assert dumps(tmp_path / "saved" / "trace.json", tmp_path, "b") == before


def test_save_refuses_to_write_outside_its_directory(tmp_path):
    evil = SaveModule("/../../escape", Path(__file__), 0x400000, None)
    process = SaveProcess(1, "x86_64-unknown-linux-gnu", (SaveThread(1, b"\x02\x82" * 8),), (evil,))
    with pytest.raises(SaveError, match="outside"):
        save_bundle(tmp_path / "out" / "b.json", CpuInfo("intel", 6, 85, 4), [process], copy_images=True)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "out").exists()


def test_a_save_that_fails_writes_nothing(tmp_path):
    """A module copy fails after the trace was staged: no file of the bundle appears, the folder's own files stay."""
    crash = load_trace(TRACES / "crash" / "trace.json")
    process = crash.processes[0]
    modules = [SaveModule(m.system_path, m.path, m.load_address, m.uuid) for m in process.modules]
    modules.append(SaveModule("/gone/libgone.so", tmp_path / "libgone.so", 0x7FFF0000, None))
    saved = SaveProcess(process.pid, process.triple, (SaveThread(5707, b"\x02\x82" * 8),), tuple(modules))
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "trace.json").write_text("mine")
    with pytest.raises(SaveError, match=r"cannot read .*/libgone.so to copy it into the bundle: No such file or"):
        save_bundle(folder, crash.cpu, [saved], copy_images=True, force=True)
    assert sorted(p.name for p in folder.rglob("*")) == ["trace.json"] and (folder / "trace.json").read_text() == "mine"
    with pytest.raises(SaveError):
        save_bundle(tmp_path / "new" / "deeper", crash.cpu, [saved], copy_images=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # no staging folder, no half-made folder


def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    """sendfile's ENOSPC names the file copied from: the message named the source as the file it could not write."""
    crash = load_trace(TRACES / "crash" / "trace.json")
    process = crash.processes[0]
    modules = tuple(SaveModule(m.system_path, m.path, m.load_address, m.uuid) for m in process.modules)
    saved = SaveProcess(process.pid, process.triple, (SaveThread(5707, b"\x02\x82" * 8),), modules)

    def full(source, _target):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(source))

    monkeypatch.setattr(shutil, "copyfile", full)
    with pytest.raises(SaveError, match=r"cannot write .*/out/modules/\S+: No space left on device") as raised:
        save_bundle(tmp_path / "out", crash.cpu, [saved], copy_images=True)
    assert str(TRACES) not in str(raised.value) and not (tmp_path / "out").exists()


def test_an_empty_path_is_refused_not_taken_for_the_current_folder(tmp_path, monkeypatch):
    """'' would be Path('.'): a save would write its bundle where LLDB runs, a load would look there."""
    monkeypatch.chdir(tmp_path)
    session = Session(tmp_path)
    try:
        session.ok(f"pt load {TRACES / 'crash' / 'trace.json'}")
        for command, what in (
            ("pt save ''", "the bundle (a folder, or a .json file)"),
            ("pt save --format perf ''", "the perf.data (a file to write)"),
            ("pt export --format folded ''", "the export (a file to write)"),
            (f"pt load {TRACES / 'crash' / 'trace.json'} --core ''", "the core file (--core)"),
            ("pt load ''", "the trace (a bundle's JSON file, its folder or a perf.data)"),
        ):
            assert session.handle(command).GetError().strip() == f"error: the path is empty: give the path of {what}"
    finally:
        session.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lldb.err", "lldb.out"]  # nothing written


def native_items(bundle_path):
    from support import native_lldb

    if not native_lldb.available():
        pytest.skip("Debian's lldb-22 with python3-lldb-22 is not installed")
    return native_lldb.decode_addresses(bundle_path)


def our_items(bundle_path):
    """Per tid, the addresses this plugin decodes from the bundle, oldest first, and ``"gap"`` for each gap."""
    trace = pt.open_bundle(bundle_path)
    return {
        t.tid: [i.address if i.kind == "instruction" else "gap" for i in t.items(forwards=True)] for t in trace.threads
    }


def test_a_live_software_trace_saves_a_bundle_native_lldb_decodes(tmp_path, monkeypatch):
    """The saved bundle names the CPU the software recorder's packets decode with; native lldb-22 agrees with us."""
    program = launchable(tmp_path, monkeypatch, "basic.c", "-O0", directory=tmp_path / "build")
    session = Session(tmp_path)
    try:
        session.launch(program, "-n main")
        session.ok("pt start --backend software")
        session.ok("breakpoint set -n fib")
        session.handle("continue")
        session.ok(f"trace save {tmp_path / 'saved'}")
        session.target.GetProcess().Kill()
    finally:
        session.close()
    bundle = tmp_path / "saved" / "trace.json"
    cpu = json.loads(bundle.read_text())["cpuInfo"]
    assert cpu == {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 4}
    ours = our_items(bundle)
    [instructions] = ours.values()
    assert len(instructions) > 200 and "gap" not in instructions
    assert native_items(bundle) == ours


def test_the_intel_pt_backend_names_the_cpu_that_wrote_its_packets(tmp_path, monkeypatch):
    """Hardware traces name this machine's CPU, as /proc/cpuinfo gives it (a non-Intel CPU is "unknown")."""
    from lldb_trace.capture import cpu
    from lldb_trace.capture.intel_pt import pmu as intel_pt_pmu
    from lldb_trace.capture.intel_pt.backend import IntelPtBackend
    from lldb_trace.capture.live_software.backend import SoftwareBackend

    cpuinfo = tmp_path / "cpuinfo"
    processor = "processor\t: {}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\n"
    processor += "model name\t: Intel(R) Xeon(R)\nstepping\t: 6\n"
    cpuinfo.write_text(processor.format(0) + "\n" + processor.format(1).replace("106", "85"))
    assert cpu.host_cpu(cpuinfo) == CpuInfo("intel", 6, 106, 6)
    assert cpu.host_cpu(tmp_path / "absent") == CpuInfo("unknown", 0, 0, 0)
    monkeypatch.setattr(cpu, "CPUINFO_PATH", str(cpuinfo))

    monkeypatch.setattr(intel_pt_pmu, "check_available", lambda: "pmu")  # no thread is traced: no event opens
    assert IntelPtBackend([], 64, False, None, False).cpu == CpuInfo("intel", 6, 106, 6)
    assert SoftwareBackend.cpu == cpu.SOFTWARE_CPU


def test_a_live_trace_saved_after_the_process_exited_has_no_end_core_and_loads(tmp_path, monkeypatch):
    """Once the process has exited there is no state to write a core of (LLDB read its registers as 0, and the
    bundle was refused: the core's pc 0 is not where the trace ends).  The bundle keeps the rest and loads."""
    binary = launchable(tmp_path, monkeypatch, "lines.c", "-O0")
    session = Session(tmp_path)
    try:
        session.launch(binary, "-n main")
        session.ok("pt start --backend software")
        session.handle("continue")
        assert "exited" in session.streams()[0]
        session.ok(f"trace save {tmp_path / 'saved'}")
    finally:
        session.close()
    (process,) = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"]
    assert "coreFile" not in process and process["startCoreFile"] == "cores/start.core"
    (thread,) = pt.open_bundle(tmp_path / "saved" / "trace.json").threads
    assert thread.item_count and thread.values().registers_at(0)["rsp"] is not None  # from the start core
