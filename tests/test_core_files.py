"""Core files: read (values/core_file.py), checked against a trace (values/core_match.py), loaded with a bundle
(``coreFile``) or a perf.data (``--core``).

The program is test_traces/src/crash.c recorded with ``lldb-trace record``; its cores are GDB's ``gcore`` at the
same stopping point (support/core_cases.py).  What the core holds is compared with what GDB reads from it and
with the program file's own bytes.
"""

import json
import os
import re
import struct
import subprocess

import pytest
from support.core_cases import OTHER_BUILD_ID, make_cases, with_keys
from support.lldb22 import needs_lldb_22, run_lldb_22

from lldb_trace import api
from lldb_trace.bundle.loader import BundleError
from lldb_trace.bundle.schemas import render_schema
from lldb_trace.elf_info import ElfInfo
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.values.core_file import CoreFileError, open_core
from lldb_trace.values.core_match import END, LAST, CoreMismatchError, ThreadEnd, core_position, thread_end
from lldb_trace.values.machine_state import TRACKED

CRASH_PC = re.compile(r"killed by SIGSEGV at (0x[0-9a-f]+)")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return make_cases(tmp_path_factory.mktemp("cores"))


def one_line_error(kind, call):
    with pytest.raises(kind) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def gdb_registers(program, core):
    """``{name: value}`` of the registers GDB reads from ``core``: the independent reference."""
    names = ["rip", "rsp", "rbp", "rbx", "rax", "rdi", "r12", "eflags", "fs_base"]
    shown = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", f"info registers {' '.join(names)}", str(program), str(core)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return {m[1]: int(m[2], 16) for m in re.finditer(r"^(\w+)\s+(0x[0-9a-f]+)", shown, re.M)}


# -- reading ------------------------------------------------------------------------------------------------


def test_a_core_gives_the_threads_registers_signal_files_and_memory_gdb_sees(cases):
    core = open_core(cases.core)
    (thread,) = core.threads
    assert (core.pid, thread.tid, thread.signal) == (cases.pid, cases.pid, 11)
    reference = gdb_registers(cases.program, cases.core)
    assert {name: thread.registers[name] for name in reference} == reference
    assert thread.registers["rflags"] == thread.registers["eflags"] and len(thread.fpregs) == 512
    assert thread.xcr0 & 0b11 == 0b11  # NT_X86_XSTATE: x87 and SSE are always enabled
    assert (core.siginfo.signo, core.siginfo.fault_address) == (11, 0)  # crash.c reads through a null pointer
    assert any(f.path == str(cases.program) and f.start == 0x400000 and f.offset == 0 for f in core.mapped_files)
    state = core.state(cases.pid)
    assert set(state.registers) == set(TRACKED) and state.registers["rip"] == reference["rip"]
    # The code at the pc is the program file's bytes there (its executable segment, not relocated: -no-pie).
    text = next(s for s in ElfInfo(cases.program).segments if s.executable)
    pc = reference["rip"]
    expected = cases.program.read_bytes()[text.offset + pc - text.vaddr :][:16]
    assert state.read_memory(pc, 16) == expected
    assert core.build_id_at(0x400000) == ElfInfo(cases.program).build_id
    assert core.build_id_at(pc) is None  # no ELF header there


def test_a_read_stops_at_the_first_byte_the_core_does_not_hold(cases, tmp_path):
    core = open_core(cases.core)
    assert core.read(0x10, 8) == b"" and core.read(0x401000, 0) == b""
    # A segment that holds only its first half (p_filesz < p_memsz, as a kernel's core has for unread pages).
    data = bytearray(cases.core.read_bytes())
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for k in range(phnum):
        at = phoff + k * phentsize
        kind, _flags, _offset, vaddr, _paddr, size = struct.unpack_from("<IIQQQQ", data, at)
        if kind == 1 and vaddr == 0x401000:  # PT_LOAD of the code
            struct.pack_into("<Q", data, at + 32, size // 2)
    half = tmp_path / "half.core"
    half.write_bytes(bytes(data))
    cut = open_core(half)
    middle = 0x401000 + 0x800
    assert cut.read(middle - 8, 64) == core.read(middle - 8, 8) and len(core.read(middle - 8, 64)) == 64


def test_a_core_rewritten_in_place_after_loading_is_read_no_more(cases, tmp_path):
    """gcore, or the kernel's next crash, rewrites a core under its name: a mapping of it died of SIGBUS when cut
    short, and mixed the new bytes with the old registers when overwritten; once changed, it gives no bytes."""
    for change in ("cut", "overwritten"):
        path = tmp_path / f"{change}.core"
        path.write_bytes(cases.core.read_bytes())
        core = open_core(path)
        held = core.read(0x401000, 16)
        assert len(held) == 16
        if change == "cut":
            os.truncate(path, 4096)
        else:
            path.write_bytes(path.read_bytes().replace(held, bytes(16)))
            os.utime(path, ns=(0, 1))  # a rewrite within the clock's tick shows in the time of change
        assert core.read(0x401000, 16) == b"" and core.read(0x401000 + 4096 * 4, 8) == b""


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "no such core file"),
        ("empty", "is not an ELF file (0 bytes)"),
        ("text", "is not an ELF file"),
        ("program", "is an ELF file of type ET_EXEC, not a core (ET_CORE)"),
        ("cut", "is truncated: its segment"),
        ("notes", "its notes are truncated"),
        ("arm", "is a core of an EM_AARCH64 process: only x86-64 cores"),
        ("directory", "is a directory, not a core file"),
        # a 32-bit or big-endian header was read as the x86-64 layout ("no thread", "Invalid argument")
        ("32-bit", "is a 32-bit little-endian ELF file: only x86-64 cores (64-bit, little-endian)"),
        ("big-endian", "is a 64-bit big-endian ELF file: only x86-64 cores"),
        ("thread twice", "two NT_PRSTATUS notes describe thread "),  # the second one was taken silently
    ],
)
def test_a_damaged_or_wrong_core_file_is_one_line_naming_it(cases, tmp_path, damage, message):
    path = tmp_path / "core"
    data = cases.core.read_bytes()
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "text":
        path.write_text("not a core\n" * 10)
    elif damage == "program":
        path = cases.program
    elif damage == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "notes":
        path.write_bytes(_with_first_note_size(data, 0x7FFFFFF0))
    elif damage == "arm":
        path.write_bytes(data[:18] + struct.pack("<H", 183) + data[20:])
    elif damage == "directory":
        path = tmp_path
    elif damage in ("32-bit", "big-endian"):
        path.write_bytes(data[:4] + (b"\x01\x01" if damage == "32-bit" else b"\x02\x02") + data[6:])
    elif damage == "thread twice":
        path.write_bytes(_with_first_note_twice(data))
    text = one_line_error(CoreFileError, lambda: open_core(path))
    assert str(path) in text and message in text


def _with_first_note_size(data, size):
    """``data`` (a core) with its first note claiming ``size`` descriptor bytes."""
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for k in range(phnum):
        kind, _flags, offset = struct.unpack_from("<IIQ", data, phoff + k * phentsize)
        if kind == 4:
            return data[: offset + 4] + struct.pack("<I", size) + data[offset + 8 :]
    raise AssertionError("the core has no PT_NOTE")


def _with_first_note_twice(data):
    """``data`` (a core) whose note segment holds its first thread's NT_PRSTATUS twice, then one note of another
    name filling the rest."""
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for k in range(phnum):
        kind, _flags, offset = struct.unpack_from("<IIQ", data, phoff + k * phentsize)
        if kind == 4:
            size, at = struct.unpack_from("<Q", data, phoff + k * phentsize + 32)[0], offset
            while True:  # to the first NT_PRSTATUS
                name_size, desc_size, note_type = struct.unpack_from("<III", data, at)
                length = 12 + (name_size + 3) // 4 * 4 + (desc_size + 3) // 4 * 4
                if note_type == 1:
                    break
                at += length
            first = data[at : at + length]
            filler = struct.pack("<III", 4, size - 2 * length - 16, 0x4242) + b"FILL"
            notes = (first * 2 + filler).ljust(size, b"\0")
            return data[:offset] + notes + data[offset + size :]
    raise AssertionError("the core has no PT_NOTE")


# -- checking against the trace ---------------------------------------------------------------------------------


def test_a_matching_core_loads_with_the_bundle_and_says_the_state_is_after_the_last_instruction(cases):
    bundle = with_keys(cases.bundle, "with-core.json", {"coreFile": str(cases.core), "startCoreFile": None})
    trace = api.open_bundle(bundle)
    process = trace.bundle.processes[0]
    assert process.core_file == cases.core and process.start_core_file is None
    # The crash's core stands at the faulting load, which never completed: where the trace says the thread stood.
    assert [thread.core_position for thread in process.threads] == [END]
    until = api.open_bundle(cases.until_bundle, core=cases.until_core)  # --until: at descend's first instruction
    assert [thread.core_position for thread in until.bundle.processes[0].threads] == [END]


def test_the_recorders_own_cores_belong_to_its_trace(cases):
    process = api.open_bundle(cases.until_bundle).bundle.processes[0]
    if process.core_file is None:
        pytest.skip("this lldb-trace record writes no core")
    assert [thread.core_position for thread in process.threads] == [END]
    # The same pc as GDB's core at the same stop (the stack may differ: GDB gives the program another environment).
    assert (
        open_core(process.core_file).threads[0].registers["rip"]
        == open_core(cases.until_core).threads[0].registers["rip"]
    )


def test_where_a_core_may_stand_after_the_last_instruction(cases):
    trace = api.open_bundle(cases.bundle, core=cases.core)
    process_trace = trace.processes[0]
    end = thread_end(process_trace, cases.pid)
    crash = int(CRASH_PC.search((cases.bundle.parent / "recording.json").read_text())[1], 16)
    assert end.stands == crash and end.last is not None
    classifier = process_trace.expander.classifier
    assert [core_position(pc, end, classifier) for pc in (crash, end.last, crash + 1)] == [END, LAST, None]
    # Without a final disable, the last instruction's successors: a mov falls through, a call goes to its target.
    fall_through = classifier[end.last].next_address
    free = ThreadEnd(end.last, None)
    assert [core_position(pc, free, classifier) for pc in (fall_through, end.last, crash + 1)] == [END, LAST, None]


def test_a_core_of_another_process_build_or_moment_is_refused_naming_the_mismatch(cases):
    foreign = open_core(cases.foreign_core).pid
    checks = [
        (cases.foreign_core, f"is a core of process {foreign}, but the trace is of process {cases.pid}"),
        (cases.other_build_core, f"has build-id {OTHER_BUILD_ID[2:]} in the core, but "),
        (cases.main_core, f"thread {cases.pid} stands at "),
    ]
    for core, message in checks:
        bundle = with_keys(cases.bundle, "mismatch.json", {"coreFile": str(core)})
        assert message in one_line_error(CoreMismatchError, lambda b=bundle: api.open_bundle(b))
        assert message in one_line_error(CoreMismatchError, lambda c=core: api.open_bundle(cases.bundle, core=c))


def test_a_trace_that_names_no_build_says_the_file_or_the_core_is_the_other_one(cases):
    """Without a uuid the build-id compared is the module file's own: either may be the wrong build (the message
    blamed the core alone)."""
    document = json.loads(cases.bundle.read_text())
    for module in document["processes"][0]["modules"]:
        module.pop("uuid", None)
    document["processes"][0]["coreFile"] = str(cases.other_build_core)
    bundle = cases.bundle.parent / "no-uuid.json"
    bundle.write_text(json.dumps(document))
    text = one_line_error(CoreMismatchError, lambda: api.open_bundle(bundle))
    assert f"has build-id {OTHER_BUILD_ID[2:]} in the core, but the file is build-id " in text
    assert "the trace names none: give the module file of the build that ran" in text


def test_a_traced_thread_missing_from_the_core_is_refused_unless_it_exited(cases):
    trace_file = next((cases.bundle.parent / "traces").iterdir())
    other = {"tid": 4242, "iptTrace": str(trace_file)}
    missing = with_keys(cases.bundle, "missing.json", {"coreFile": str(cases.core)}, [other])
    text = one_line_error(CoreMismatchError, lambda: api.open_bundle(missing))
    assert f"the core has no thread 4242 (its threads: {cases.pid})" in text
    exited = with_keys(
        cases.bundle, "exited.json", {"coreFile": str(cases.core)}, [{**other, "stopReason": {"exited": True}}]
    )
    positions = [t.core_position for t in api.open_bundle(exited).bundle.processes[0].threads]
    assert positions == [END, None]


def test_core_keys_name_missing_files_and_a_start_core_of_another_process_or_build(cases):
    for key in ("coreFile", "startCoreFile"):
        bundle = with_keys(cases.bundle, "missing-file.json", {key: "nowhere.core"})
        text = one_line_error(BundleError, lambda b=bundle: api.open_bundle(b))
        assert f"processes[0].{key}:" in text and "nowhere.core does not exist" in text
    # a loop of links was said not to exist; a NUL cut LLDB's line short there
    (cases.bundle.parent / "loop-a").symlink_to("loop-b")
    (cases.bundle.parent / "loop-b").symlink_to("loop-a")
    bundle = with_keys(cases.bundle, "loop.json", {"coreFile": "loop-a"})
    assert "loop-a cannot be reached: Too many levels of symbolic links: fix the path" in one_line_error(
        BundleError, lambda: api.open_bundle(bundle)
    )
    assert "loop-a cannot be reached: Too many levels of symbolic links" in one_line_error(
        CoreFileError, lambda: api.open_bundle(cases.bundle, core=cases.bundle.parent / "loop-a")
    )
    bundle = with_keys(cases.bundle, "nul.json", {"coreFile": "a\x00b"})
    text = one_line_error(BundleError, lambda: api.open_bundle(bundle))
    assert "a\\x00b cannot be a file's name: it holds a NUL byte" in text and "\x00" not in text
    bundle = with_keys(cases.bundle, "start.json", {"startCoreFile": str(cases.foreign_core)})
    assert "(the state where recording started) is a core of process" in one_line_error(
        CoreMismatchError, lambda: api.open_bundle(bundle)
    )
    # a start state of another build gave that build's values at the first positions (its globals' first values)
    bundle = with_keys(cases.bundle, "start-build.json", {"startCoreFile": str(cases.other_build_core)})
    assert f"(the state where recording started): {cases.program} at 0x400000 has build-id {OTHER_BUILD_ID[2:]}" in (
        one_line_error(CoreMismatchError, lambda: api.open_bundle(bundle))
    )


def test_a_perf_data_takes_its_core_from_the_load(cases):
    trace = api.open_bundle(cases.perf_data, core=cases.perf_core)
    assert [t.core_position for t in trace.bundle.processes[0].threads] == [END]
    assert trace.bundle.processes[0].core_file == cases.perf_core
    assert "but the trace is of process" in one_line_error(
        CoreMismatchError, lambda: api.open_bundle(cases.perf_data, core=cases.core)
    )


def test_the_check_decodes_only_the_end_of_the_trace(cases):
    trace = api.open_bundle(cases.bundle)  # recorded with a PSB every 256 bytes
    process_trace = ProcessTrace(trace.bundle, trace.processes[0].process, tail_first_bytes=0)
    assert thread_end(process_trace, cases.pid).last is not None
    assert process_trace.decoded_if_done(cases.pid) is None and process_trace.tail_if_done(cases.pid) is not None


# -- the schema and the debuggers -------------------------------------------------------------------------------


def test_trace_schema_lists_the_new_keys():
    for name in ("intel-pt", "intel-pt-lldb"):
        shown = render_schema(name)
        for key in ('"coreFile"?: ', '"startCoreFile"?: ', '"syscallResults"?: ', '"registerStates"?: '):
            assert key in shown, (name, key)


def test_trace_load_with_a_core_and_a_wrong_one_leaves_no_target(cases, tmp_path):
    session_module = pytest.importorskip("support.lldb_session", reason="LLDB's Python bindings")
    session = session_module.Session(tmp_path)
    try:
        refused = session.handle(f"pt load {cases.perf_data} --core {cases.main_core}")
        assert not refused.Succeeded() and "is a core of process" in refused.GetError()
        session.handle(f"trace load {cases.bundle} --core {cases.main_core}")  # routed: errors go to the stream
        assert f"thread {cases.pid} stands at " in session.streams()[1]
        assert session.debugger.GetNumTargets() == 0
        two = session.handle(f"pt load {cases.bundle} {cases.bundle} --core {cases.core}")
        assert "--core goes with one trace file" in two.GetError() and session.debugger.GetNumTargets() == 0
        session.ok(f"trace load {cases.perf_data} --core {cases.perf_core}")
        assert session.debugger.GetNumTargets() == 1
    finally:
        session.close()


@needs_lldb_22
def test_lldb_22_loads_a_bundle_with_the_keys_with_and_without_the_plugin(cases, tmp_path):
    bundle = with_keys(cases.bundle, "lldb22.json", {"coreFile": str(cases.core)})
    with_plugin = run_lldb_22(tmp_path, [f"trace load {bundle}", "thread list"])
    assert with_plugin.returncode == 0 and f"tid = {cases.pid}" in with_plugin.stdout, with_plugin.stderr
    native = subprocess.run(
        ["lldb-22", "-x", "-b", "-o", f"trace load {bundle}", "-o", "thread list"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert native.returncode == 0 and f"tid = {cases.pid}" in native.stdout, native.stderr


def test_a_core_after_a_final_system_call_stands_where_it_returns(tmp_path):
    """A trace that ends with the exit system call: the core stands after it (lldb-trace record's end core), or
    before it.  Any other place was accepted (a far transfer may go anywhere), so the start core passed for the
    end one, and the values in the past came out wrong."""
    from support.core_cases import record
    from support.paths import SOURCES
    from support.stepped_truth import build_program

    program = tmp_path / "recursion"
    build_program(SOURCES / "recursion.c", ["-O0"], program)
    record(program, tmp_path / "exits")
    bundle = tmp_path / "exits" / "trace.json"
    assert api.open_bundle(bundle).threads[0].registers_at(0) is not None  # the recorder's own cores match
    start_core = tmp_path / "exits" / "cores" / "start.core"
    text = one_line_error(CoreMismatchError, lambda: api.open_bundle(bundle, core=start_core))
    assert "stands at " in text and "the core was taken elsewhere" in text


def test_a_program_header_table_past_any_file_is_a_damaged_core(cases, tmp_path):
    data = bytearray(cases.core.read_bytes())
    struct.pack_into("<Q", data, 32, 1 << 63)  # e_phoff: pyelftools' seek there raised OSError
    damaged = tmp_path / "far.core"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CoreFileError, match=r"far.core is a damaged ELF file \(.*\): give an ELF core file"):
        open_core(damaged)


def test_a_memory_segment_off_its_page_is_a_damaged_core(cases, tmp_path):
    """A PT_LOAD moved by 8 bytes showed each of its bytes at the wrong address: refused, as overlapping ones are."""
    data = bytearray(cases.core.read_bytes())
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    at = next(
        phoff + k * phentsize for k in range(phnum) if struct.unpack_from("<I", data, phoff + k * phentsize)[0] == 1
    )
    struct.pack_into("<Q", data, at + 16, struct.unpack_from("<Q", data, at + 16)[0] + 8)  # p_vaddr
    shifted = tmp_path / "shifted.core"
    shifted.write_bytes(bytes(data))
    with pytest.raises(CoreFileError, match=r"shifted.core is damaged: its memory segment at 0x[0-9a-f]*8 "):
        open_core(shifted)
