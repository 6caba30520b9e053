"""Memory another process, or another mapping of the same memory, may change behind the traced thread's back is
known only where a known state gives it (values/shared_mappings.py): test_traces/src/shared_memory.c stores through
one of two mappings of a memfd, then through the other, and waits for a forked child that writes a shared page.
The recovery showed 0 in the second mapping after the first was written (what mmap left, carried forward), and
the child's value, which the end core holds, before the fork."""

import json
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile
from support.paths import SOURCES

from lldb_trace import api
from lldb_trace.values import process_values
from lldb_trace.values.core_file import MappedFile
from lldb_trace.values.recovery import ThreadValues
from lldb_trace.values.shared_mappings import shared_spans

STORED, WRITTEN_BY_CHILD = 0x4242424242424242, 0xC0C0C0C0C0C0C0C0


def recorded(tmp_path_factory, name, flags, skip_if_2=None):
    """``(bundle folder, binary)``: test_traces/src/NAME.c built and recorded, and its bundle with the end core
    alone beside (end_only.json); skipped with ``skip_if_2`` where the program exits 2 (what it needs is missing)."""
    folder = tmp_path_factory.mktemp(name)
    binary = folder / name
    subprocess.run(["gcc", *flags, "-g", "-static", "-o", str(binary), str(SOURCES / f"{name}.c")], check=True)
    if skip_if_2 and subprocess.run([str(binary)], capture_output=True).returncode == 2:
        pytest.skip(skip_if_2)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(folder / "full"), "--", str(binary)]
    subprocess.run(command, capture_output=True, timeout=300)
    bundle = json.loads((folder / "full" / "trace.json").read_text())
    for process in bundle["processes"]:  # the end core alone, as a perf.data with --core has it
        process.pop("startCoreFile")
        for thread in process["threads"]:
            thread.pop("syscallResults"), thread.pop("registerStates")
    (folder / "full" / "end_only.json").write_text(json.dumps(bundle))
    return folder / "full", binary


def symbols(binary, *names):
    with open(binary, "rb") as file:
        table = ELFFile(file).get_section_by_name(".symtab")
        return [table.get_symbol_by_name(name)[0]["st_value"] for name in names]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    folder, binary = recorded(tmp_path_factory, "shared_memory", ["-O0"])
    return folder, dict(zip(("second_view", "page"), symbols(binary, "second_view", "page"), strict=True))


def _word(thread, position, address):
    data, mask = thread.read_memory_at(position, address, 8)
    return int.from_bytes(data, "little") if mask == b"\xff" * 8 else None


@pytest.mark.parametrize("bundle", ["trace.json", "end_only.json"])
def test_a_shared_mappings_bytes_are_known_only_where_a_known_state_gives_them(recording, bundle):
    folder, pointers = recording
    (thread,) = api.open_bundle(folder / bundle).threads
    end = thread.item_count
    second_view, page = (_word(thread, end, pointers[name]) for name in ("second_view", "page"))
    assert _word(thread, end, page) == WRITTEN_BY_CHILD and _word(thread, end, second_view) == 0x9999999999999999
    (stored,) = thread.find(line=("shared_memory.c", 24), limit=1)  # through the first mapping: STORED in both
    (overwritten,) = thread.find(line=("shared_memory.c", 26), limit=1)  # through the second
    (forked,) = thread.find(line=("shared_memory.c", 27), limit=1)
    for position in range(stored.index + 4, overwritten.index + 3):  # (it was shown 0)
        assert _word(thread, position, second_view) in (None, STORED), position
    for position in range(forked.index):  # (it was shown the child's value)
        assert _word(thread, position, page) in (None, 0), position
    if bundle == "trace.json":  # the recorder's registers give the store's address and value
        stores = [access for access in thread.find(write=second_view, size=8) if access.exact]
        assert stores[0].new == (0x9999999999999999).to_bytes(8, "little") and stores[0].old is None


def test_every_file_mapping_no_module_backs_the_vvar_page_and_unmapped_memory_are_taken_for_shared():
    """A read-only shared page another process writes (it was left out as "nothing writes it"), a memfd named like
    a module but mapped elsewhere (it was left out by its name), and memory the end core maps nowhere (a shared
    mapping unmapped before the end) are volatile; a module's own mappings are not."""

    class Core:
        mapped = ((0x1000, 0x9000), (0xA000, 0xC000), (0xF000, 0x10000))
        unheld = ((0x5000, 0x6000), (0xA000, 0xC000))  # a file's page the core leaves to it; [vvar], not held
        mapped_files = (
            MappedFile(0x1000, 0x2000, 0, "/usr/lib/libc.so.6"),  # a module's data: private
            MappedFile(0x2000, 0x3000, 0, "/memfd:x (deleted)"),
            MappedFile(0x5000, 0x6000, 0, "/dev/zero (deleted)"),  # read-only here: another process may write it
            MappedFile(0x7000, 0x8000, 0, "/memfd:x/libc.so.6 (deleted)"),  # libc's name, not libc's place
            MappedFile(0x8000, 0x9000, 0, "/tmp/prog (deleted)"),  # the program, rebuilt while it ran
        )

    modules = [(("/lib/x86_64-linux-gnu/libc.so.6", ""), 0x1000, 0x1800), (("/tmp/prog", ""), 0x8000, 0x1000)]
    assert shared_spans([Core(), None], modules, end=Core()) == [
        (0, 0x1000),
        (0x2000, 0x3000),
        (0x5000, 0x6000),
        (0x7000, 0x8000),
        (0x9000, 0xF000),
        (0x10000, 1 << 64),
    ]


@pytest.fixture(scope="module")
def io_uring_recording(tmp_path_factory):
    why = "io_uring is not allowed here (a container's seccomp, or kernel.io_uring_disabled)"
    folder, binary = recorded(tmp_path_factory, "io_uring_read", ["-O2"], why)
    return folder, symbols(binary, "buf")[0]


@pytest.mark.parametrize("bundle", ["trace.json", "end_only.json"])
def test_memory_an_io_uring_may_write_is_known_nowhere_but_at_known_states(io_uring_recording, bundle):
    """io_uring_read.c: the kernel completes a read into buf while returning from a write(), which says it writes
    nothing; buf was shown the read's bytes before it, even with every register recorded."""
    folder, buffer = io_uring_recording
    (thread,) = api.open_bundle(folder / bundle).threads
    (written,) = thread.find(line=("io_uring_read.c", 42), limit=1)  # write(pipes[1], "ABCDEFGH", 8)
    for position in range(written.index):
        data, mask = thread.read_memory_at(position, buffer, 8)
        assert not any(known and byte in b"ABCDEFGH" for byte, known in zip(data, mask, strict=True)), position


@pytest.fixture(scope="module")
def rseq_recording(tmp_path_factory):
    return recorded(tmp_path_factory, "rseq_cpu", ["-O2"], "fewer than two CPUs to move a thread between")[0]


def test_the_cpu_a_thread_ran_on_is_not_taken_from_the_end(rseq_recording):
    """rseq_cpu.c reads CPU 0, 1, 0, ... from its rseq area: from the end core the area was known at every
    position (the end's CPU), and with the system calls' results a read of CPU 0 was shown 1."""
    bundle = json.loads((rseq_recording / "end_only.json").read_text())
    full = json.loads((rseq_recording / "trace.json").read_text())
    for thread, recorded in zip(bundle["processes"][0]["threads"], full["processes"][0]["threads"], strict=True):
        thread["syscallResults"] = recorded["syscallResults"]
    (rseq_recording / "end_and_calls.json").write_text(json.dumps(bundle))
    (thread,) = api.open_bundle(rseq_recording / "end_and_calls.json").threads
    (truth,) = api.open_bundle(rseq_recording / "trace.json").threads  # the recorder's registers, at every position
    for position in range(thread.item_count):
        shown, true = thread.registers_at(position), truth.registers_at(position)
        assert all(shown[name] in (None, true[name]) for name in ("rax", "rdx", "rcx")), position
    (area,) = [span for span in thread.values().volatile if span[1] - span[0] == 32]  # the rseq area's bytes
    assert thread.read_memory_at(thread.item_count, area[0], 32)[1] == b"\xff" * 32  # known at the end alone
    assert thread.read_memory_at(thread.item_count - 1, area[0], 32)[1] == bytes(32)


@pytest.fixture(scope="module")
def unmapped_recording(tmp_path_factory):
    """shared_unmapped.c recorded, with a copy that keeps every known state but the registers (no_states.json)."""
    folder = recorded(tmp_path_factory, "shared_unmapped", ["-O0"])[0]
    bundle = json.loads((folder / "trace.json").read_text())
    for process in bundle["processes"]:
        for thread in process["threads"]:
            thread.pop("registerStates")
    (folder / "no_states.json").write_text(json.dumps(bundle))
    return folder


@pytest.mark.parametrize("bundle", ["end_only.json", "no_states.json"])
def test_memory_shared_and_gone_by_the_end_or_changed_through_a_file_is_not_carried(unmapped_recording, bundle):
    """shared_unmapped.c reads a shared page before and after a child writes it, then unmaps it; then a memfd
    mapped read-only before and after a pwrite to it.  The end core lists neither as writable: each read's value
    was carried back from the later one (20 wrong values from the end core alone, against the recorder's)."""
    (shown,) = api.open_bundle(unmapped_recording / bundle).threads
    (truth,) = api.open_bundle(unmapped_recording / "trace.json").threads
    for position in range(truth.item_count + 1):
        recorded_there = truth.registers_at(position)
        for name, value in shown.registers_at(position).items():
            assert value in (None, recorded_there[name]), (position, name)


def test_a_process_sharing_the_memory_is_named_and_its_writes_are_not_carried_back(tmp_path_factory):
    """clone_vm_child.c's constructor starts a process in its memory (CLONE_VM, SIGCHLD) that writes a global
    main reads before and after.  The recorder failed ("exited before reaching main": it put main's breakpoint
    back as in a fork's copy); now it names the child among the tasks untraced in this memory, and the end core
    alone shows the read before the write unknown, not the child's value."""
    folder = recorded(tmp_path_factory, "clone_vm_child", ["-O0"])[0]
    process = json.loads((folder / "trace.json").read_text())["processes"][0]
    assert process["untracedThreads"] == process["untracedChildren"] and len(process["untracedChildren"]) == 1
    (shown,) = api.open_bundle(folder / "end_only.json").threads
    (truth,) = api.open_bundle(folder / "trace.json").threads
    for position in range(truth.item_count + 1):
        recorded_there = truth.registers_at(position)
        for name, value in shown.registers_at(position).items():
            assert value in (None, recorded_there[name]), (position, name)
    # saved as a perf.data, the untraced task goes with it (it was dropped: the child's write was then carried back
    # to main's first read, as known)
    saved = folder.parent / "saved.data"
    lldb = pytest.importorskip("support.lldb_session")
    session = lldb.Session(folder.parent)
    try:
        session.ok(f"trace load {folder / 'trace.json'}")
        session.ok(f"trace save --format perf {saved}")
    finally:
        session.close()
    loaded = api.open_bundle(saved, core=folder / "cores" / "end.core")
    assert loaded.bundle.processes[0].untraced_threads == tuple(process["untracedThreads"])
    (from_perf,) = loaded.threads
    for position in range(truth.item_count + 1):
        recorded_there = truth.registers_at(position)
        for name, value in from_perf.registers_at(position).items():
            assert value in (None, recorded_there[name]), (position, name)


def test_a_task_started_before_a_long_traces_tail_makes_its_memory_shared(tmp_path, monkeypatch):
    """The recovery covers a long trace's last MOST_POSITIONS positions only, and looked for a clone there only:
    clone_vm_child.c recorded from its first instruction (its constructor's clone in the trace), with no bundle
    key naming the child and the tail cut short of the clone, showed the child's value before its write."""
    binary = tmp_path / "clone_vm_child"
    source = SOURCES / "clone_vm_child.c"
    subprocess.run(["gcc", "-O0", "-g", "-static", "-o", str(binary), str(source)], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--from-start", "-o", str(tmp_path / "rec"), "--"]
    subprocess.run([*command, str(binary)], capture_output=True, timeout=300, check=True)
    bundle = json.loads((tmp_path / "rec" / "trace.json").read_text())
    for process in bundle["processes"]:  # as a perf.data and its core give it
        del process["untracedThreads"], process["startCoreFile"]
        for thread in process["threads"]:
            del thread["syscallResults"], thread["registerStates"]
    (tmp_path / "rec" / "unnamed.json").write_text(json.dumps(bundle))
    monkeypatch.setattr(process_values, "MOST_POSITIONS", 400)  # the clone is some 550 positions from the end
    (shown,) = api.open_bundle(tmp_path / "rec" / "unnamed.json").threads
    (truth,) = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    assert shown.values().values.shared
    for position in range(truth.item_count - 400, truth.item_count + 1):
        recorded_there = truth.registers_at(position)
        for name, value in shown.registers_at(position).items():
            assert value in (None, recorded_there[name]), (position, name)


def test_an_rseq_area_the_thread_registers_is_volatile():
    """A program that turns glibc's rseq off may register its own area (``rseq(&area, 32, 0, sig)``): the kernel
    rewrites its CPU numbers when the thread moves, and they were carried back from the end."""
    code = bytes.fromhex("48c7c740404000b84e0100000f05")  # mov rdi, 0x404040; mov eax, 334; syscall
    values = ThreadValues([0x401000, 0x401007, 0x40100C], lambda address, size: code[address - 0x401000 :][:size])
    assert values.volatile == [(0x404040, 0x404060)]


def test_with_no_state_at_the_end_memory_the_start_did_not_map_is_volatile(tmp_path_factory):
    """shared_no_end.c maps a shared page after recording starts, stores 111, and a child writes 222 before
    checkpoint; the process exits.  With the start state but none at the end (a `pt start` trace saved after the
    process exited), the page showed 111 at checkpoint: nothing known says it was shared, or unmapped later."""
    folder, binary = recorded(tmp_path_factory, "shared_no_end", ["-O0"])
    bundle = json.loads((folder / "trace.json").read_text())
    del bundle["processes"][0]["coreFile"]
    (folder / "no_end.json").write_text(json.dumps(bundle))
    (thread,) = api.open_bundle(folder / "no_end.json").threads
    (stop,) = thread.find(function="checkpoint", limit=1)
    page = _word(thread, stop.index, symbols(binary, "page")[0])
    assert page is not None and _word(thread, stop.index, page) != 111
