"""values.core_writer: the ELF cores the recorder and ``trace save`` write, compared with GDB's gcore of the
same stopped process (registers equal, memory equal wherever both dumped it), and what a failed write leaves."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.paths import SOURCES

from lldb_trace.capture.process_view import ProcessMemory
from lldb_trace.capture.ptrace_recorder import core_snapshot, ptrace
from lldb_trace.values.core_file import open_core
from lldb_trace.values.core_writer import CoreRegion, CoreSnapshot, CoreThread, CoreWriteError, write_core
from lldb_trace.values.machine_state import GENERAL

needs_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="GDB is not installed")


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    """(our core, gcore's) of one process stopped by its own SIGSTOP after it read a file."""
    folder = tmp_path_factory.mktemp("cores")
    program = folder / "known_states"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(program), str(SOURCES / "known_states.c")], check=True)
    (folder / "data.txt").write_bytes(b"some data\n")
    pid = ptrace.launch(str(program), [str(folder / "data.txt"), "stop"])
    try:
        ptrace.cont(pid)
        _, status = os.waitpid(pid, ptrace.WALL)
        assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGSTOP
        memory = ProcessMemory(pid)
        snapshot = core_snapshot.snapshot(pid, [core_snapshot.thread_state(pid)], memory, str(program), ["stop"])
        ours = write_core(snapshot, folder / "ours.core")
        memory.close()
        ptrace.ptrace(ptrace.PTRACE_DETACH, pid, 0, signal.SIGSTOP)  # it stays stopped for GDB
        if shutil.which("gdb") is None:
            return ours, None
        subprocess.run(
            ["gdb", "-batch", "-nx", "-p", str(pid), "-ex", f"gcore {folder / 'gdb.core'}"],
            capture_output=True,
            timeout=120,
            check=True,
        )
    finally:
        ptrace.end(pid)
    return ours, folder / "gdb.core"


def _loads(path):
    """``[(address, size)]`` of the PT_LOAD segments that hold bytes."""
    with open(path, "rb") as file:
        return [(s["p_vaddr"], s["p_filesz"]) for s in ELFFile(file).iter_segments() if s["p_type"] == "PT_LOAD"]


@needs_gdb
def test_registers_equal_gcores(cores):
    ours, gdbs = (open_core(path) for path in cores)
    [mine], [theirs] = ours.threads, gdbs.threads
    assert mine.tid == theirs.tid and ours.pid == gdbs.pid
    for name in (*GENERAL, "rflags", "fs_base", "gs_base", "cs", "ss"):
        assert mine.registers[name] == theirs.registers[name], name
    # x87 and SSE state; bytes 28-31 are MXCSR_MASK, which GDB leaves 0, and what follows xmm15 is reserved.
    assert mine.fpregs[:28] + mine.fpregs[32:416] == theirs.fpregs[:28] + theirs.fpregs[32:416]


@needs_gdb
def test_memory_equals_gcores_wherever_both_dumped_it(cores):
    ours, gdbs = (open_core(path) for path in cores)
    theirs = [(address, size) for address, size in _loads(cores[1]) if size]
    compared = 0
    for address, size in _loads(cores[0]):
        for other, other_size in theirs:
            start, end = max(address, other), min(address + size, other + other_size)
            if start < end:
                assert ours.read(start, end - start) == gdbs.read(start, end - start), hex(start)
                compared += end - start
    assert compared > 100_000  # the stack, the heap, the writable data of the program and libc


def test_the_core_names_its_files_its_process_and_auxv(cores):
    core = open_core(cores[0])
    files = {m.path for m in core.mapped_files}
    assert any(path.endswith("/known_states") for path in files) and any("libc.so" in path for path in files)
    [main] = [m for m in core.mapped_files if m.path.endswith("/known_states") and m.offset == 0]
    assert core.build_id_at(main.start) is not None  # the ELF header page is dumped: the build-id is there


def _tiny_snapshot(read_memory=lambda address, size: bytes(size)):
    registers = {"rip": 0x401000, "rsp": 0x7FF000}
    return CoreSnapshot(1234, [CoreThread(1234, registers)], [CoreRegion(0x7FE000, 0x800000, "rw-p")], read_memory)


def test_a_folder_that_cannot_be_written_is_a_one_line_error_and_leaves_nothing(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(CoreWriteError, match=r"^cannot write the core file .*: Not a directory$"):
        write_core(_tiny_snapshot(), tmp_path / "a_file" / "x.core")
    assert [p.name for p in tmp_path.iterdir()] == ["a_file"]


def test_a_read_that_fails_midway_leaves_no_partial_core(tmp_path):
    def failing(address, size):
        raise OSError(5, "Input/output error")

    with pytest.raises(CoreWriteError, match="Input/output error"):
        write_core(_tiny_snapshot(failing), tmp_path / "x.core")
    assert list(tmp_path.iterdir()) == []


def test_a_snapshot_without_threads_is_refused(tmp_path):
    empty = CoreSnapshot(1, [], [], lambda address, size: b"")
    with pytest.raises(CoreWriteError, match="at least one thread"):
        write_core(empty, tmp_path / "x.core")
    assert list(tmp_path.iterdir()) == []


def test_unreadable_pages_are_zeros_and_vvar_is_not_dumped(tmp_path):
    def holes(address, size):
        return b"" if address == 0x7FF000 else b"\x11" * min(size, 0x7FF000 - address) if address < 0x7FF000 else b""

    regions = [CoreRegion(0x7FE000, 0x800000, "rw-p"), CoreRegion(0x900000, 0x904000, "r--p", "[vvar]")]
    snapshot = CoreSnapshot(7, [CoreThread(7, {"rip": 1})], regions, holes)
    core = open_core(write_core(snapshot, tmp_path / "x.core"))
    assert core.read(0x7FE000, 0x2000) == b"\x11" * 0x1000 + bytes(0x1000)
    assert core.read(0x900000, 1) == b""


@pytest.mark.usefixtures("live_addresses_kept")
def test_trace_save_of_a_live_process_writes_its_core_and_it_loads_in_both_lldbs(tmp_path, monkeypatch):
    lldb = pytest.importorskip("lldb")
    from support.launching import launchable
    from support.lldb_batch import lldb_batch
    from support.lldb_session import Session

    program = launchable(tmp_path, monkeypatch, "basic.c", "-O0", directory=tmp_path / "build")
    session = Session(tmp_path)
    try:
        session.launch(program, "-n fib")
        process = session.target.GetProcess()
        session.ok("pt start --backend software")
        session.handle("continue")
        frame = process.GetSelectedThread().GetFrameAtIndex(0)
        live = {name: frame.FindRegister(name).GetValueAsUnsigned() for name in (*GENERAL, "fs_base")}
        data, error = frame.FindRegister("xmm0").GetData(), lldb.SBError()
        live_xmm0 = "{" + " ".join(f"0x{byte:02x}" for byte in data.ReadRawData(error, 0, 16)) + "}"
        session.ok(f"trace save {tmp_path / 'saved'}")
        session.ok(f"trace save {tmp_path / 'without'} --no-core")
        pid = process.GetProcessID()
        process.Kill()
    finally:
        session.close()
    process_json = json.loads((tmp_path / "saved" / "trace.json").read_text())["processes"][0]
    assert process_json["coreFile"] == f"cores/{pid}.core"
    assert "coreFile" not in json.loads((tmp_path / "without" / "trace.json").read_text())["processes"][0]
    core_path = tmp_path / "saved" / process_json["coreFile"]
    core = open_core(core_path)
    assert {name: core.threads[0].registers[name] for name in live} == live
    for binary in (str(Path(sys.executable).parent / "lldb"), "lldb-22"):
        shown = lldb_batch(binary, f"target create {program} --core {core_path}", "register read", "bt 1")
        for name in ("rip", "rsp", "rbp", "rdi"):
            assert f"{name} = 0x{live[name]:016x}" in shown.stdout, shown.stdout
        assert (
            f"xmm0 = {live_xmm0}"
            in lldb_batch(binary, f"target create {program} --core {core_path}", "register read xmm0").stdout
        )
        assert "basic`fib" in shown.stdout
