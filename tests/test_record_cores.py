"""``lldb-trace record`` keeps the known states: a core where recording starts and where it ends, and each
system call's results, checked against the program's own data and against LLDB and GDB reading the cores."""

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.lldb22 import needs_lldb_22
from support.lldb_batch import lldb_batch
from support.paths import SOURCES
from support.reference_decode import check_exact, truth_of

from lldb_trace import api
from lldb_trace.elf_info import ElfInfo
from lldb_trace.remote.replay import Replay
from lldb_trace.values.core_file import open_core

DATA = b"known bytes, 25 of them.\n"
PIP_LLDB = str(Path(sys.executable).parent / "lldb")


def record_cli(outdir, program, *options, args=()):
    return subprocess.run(
        [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(outdir), *options, "--", str(program), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("known_states")
    binary = folder / "known_states"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "known_states.c")], check=True)
    (folder / "data.txt").write_bytes(DATA)
    return binary


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, program):
    out = tmp_path_factory.mktemp("recorded") / "b"
    result = record_cli(out, program, args=[str(program.parent / "data.txt")])
    assert result.returncode == 0, result.stderr
    return out


def _process(bundle_folder):
    return json.loads((bundle_folder / "trace.json").read_text())["processes"][0]


def _symbol_address(program, core, name):
    """Where symbol ``name`` of the (PIE) ``program`` is in the process the core shows."""
    [low] = [m.start for m in core.mapped_files if m.path == str(program) and m.offset == 0]
    with open(program, "rb") as file:
        [symbol] = ELFFile(file).get_section_by_name(".symtab").get_symbol_by_name(name)
    return symbol["st_value"] + low  # a PIE's file addresses start at 0


def test_the_bundle_names_both_cores_and_each_threads_syscall_results(recorded):
    process = _process(recorded)
    assert process["coreFile"] == "cores/end.core" and process["startCoreFile"] == "cores/start.core"
    [thread] = process["threads"]
    assert thread["syscallResults"] == f"syscalls/{thread['tid']}.json"
    files = json.loads((recorded / "recording.json").read_text())["files"]
    assert {"cores/end.core", "cores/start.core", thread["syscallResults"]} <= set(files)


def test_who_wrote_this_names_the_system_call_that_wrote_the_bytes(recorded, program):
    """known_states.c's read() fills ``contents``: its recorded result is a write there, in pt find's list and to a
    watchpoint, with the bytes it wrote (it was left out: only instructions' own stores were listed)."""
    contents = _symbol_address(program, open_core(recorded / "cores/end.core"), "contents")
    (thread,) = api.open_bundle(recorded / "trace.json").threads
    (write,) = [access for access in thread.find(write=contents, size=len(DATA)) if access.exact]
    assert write.new == DATA and write.address == contents and write.size == len(DATA)
    assert thread.values()._effect(thread.values().addresses[write.position]).kind == "syscall"


def test_who_read_this_names_the_xrstor_that_may_have_read_a_saved_state(recorded):
    """Lazy binding's trampoline saves the vector state with xsavec and reads it back with xrstor: the restore is a
    read that may have touched each byte its components reach (it reads only the parts the header marks), not
    a read of nothing (it was left out)."""
    (thread,) = api.open_bundle(recorded / "trace.json").threads
    values = thread.values()
    restores = [i for i, pc in enumerate(values.addresses) if values._effect(pc).mnemonic.startswith("xrstor")]
    assert restores, "the lazy binding of known_states.c's first libc call"
    area = thread.registers_at(restores[-1])["rsp"] + 0x40  # dl-trampoline: xrstor 0x40(%rsp)
    for offset in (0, 0x240, 0x300):  # the legacy region, the header's end, the AVX state
        found = [access for access in thread.find(read=area + offset, size=8) if access.position == restores[-1]]
        assert [(access.kind, access.exact) for access in found] == [("read", False)]


def test_the_cores_stand_where_the_trace_starts_and_ends(recorded, program):
    tid = _process(recorded)["pid"]
    truth = truth_of(recorded / "trace.json", tid)
    start, end = open_core(recorded / "cores/start.core"), open_core(recorded / "cores/end.core")
    assert [t.tid for t in start.threads] == [t.tid for t in end.threads] == [tid]
    assert start.threads[0].xcr0 == end.threads[0].xcr0 and end.threads[0].xcr0 & 0b11 == 0b11  # NT_X86_XSTATE
    assert start.threads[0].registers["rip"] == truth.addresses[0] == _symbol_address(program, start, "main")
    # At exit_group: the thread has entered the kernel past its last instruction, the syscall.
    registers = end.threads[0].registers
    assert registers["orig_rax"] == 231 and registers["rip"] == truth.addresses[-1] + 2
    contents, total = _symbol_address(program, end, "contents"), _symbol_address(program, end, "total")
    assert end.read(contents, len(DATA)) == DATA and struct.unpack("<q", end.read(total, 8))[0] == 2 * len(DATA)
    assert start.read(contents, len(DATA)) == bytes(len(DATA))  # nothing read yet where recording started


def test_syscall_results_hold_what_the_kernel_returned(recorded, program):
    process = _process(recorded)
    [thread] = process["threads"]
    results = json.loads((recorded / thread["syscallResults"]).read_text())
    truth = truth_of(recorded / "trace.json", thread["tid"])
    for result in results:  # N counts the instructions before the syscall: rcx holds the one after it
        assert result["registers"]["rcx"] == truth.addresses[result["instruction"] + 1]
        assert not result["unknownMemory"]  # open, read, fstat, close, clock_gettime: all known
    written = {bytes.fromhex(data)[:64]: (address, result) for result in results for address, data in result["memory"]}
    _address, read = written[DATA]
    assert read["registers"]["rax"] == len(DATA)
    stat = os.stat(program.parent / "data.txt")
    [(stat_buffer, _)] = [(data, r) for data, r in written.items() if len(data) == 64 and r[1]["registers"]["rax"] == 0]
    assert struct.unpack_from("<QQ", stat_buffer) == (stat.st_dev, stat.st_ino)  # struct stat's first fields
    [clock] = [data for data in written if len(data) == 16]
    seconds, nanoseconds = struct.unpack("<qq", clock)
    assert 0 <= seconds < 60 and 0 <= nanoseconds < 10**9  # CPU time of a process that just started


def test_a_crash_core_has_the_signal_and_the_fault_address_before_the_signal_is_delivered(tmp_path, program):
    result = record_cli(tmp_path / "b", program, args=[str(program.parent / "data.txt"), "crash"])
    assert result.returncode == 0, result.stderr
    process = _process(tmp_path / "b")
    [thread] = process["threads"]
    core = open_core(tmp_path / "b" / process["coreFile"])
    assert core.threads[0].signal == 11 and core.siginfo.fault_address == 0
    assert core.threads[0].registers["rip"] == int(thread["stopReason"]["pc"], 16)
    core_path = tmp_path / "b" / process["coreFile"]
    commands = [f"target create {program} --core {core_path}", "thread list", "frame variable got", "p total"]
    for binary in (PIP_LLDB, "lldb-22"):
        shown = lldb_batch(binary, *commands).stdout
        assert "stop reason = SIGSEGV: address not mapped to object (fault address=0x0)" in shown, shown
        assert f"(ssize_t) got = {len(DATA)}" in shown and f"(long) {2 * len(DATA)}" in shown


@needs_lldb_22
def test_the_end_core_loads_in_both_lldbs_and_gdb(recorded, program):
    core = recorded / "cores/end.core"
    rip = open_core(core).threads[0].registers["rip"]
    commands = [
        f"target create {program} --core {core}",
        "register read rip",
        "bt",
        "p total",
        "memory read -f c -s 1 -c 4 &contents",
    ]
    for binary in (PIP_LLDB, "lldb-22"):
        shown = lldb_batch(binary, *commands).stdout
        assert f"rip = 0x{rip:016x}" in shown and "`__libc_start_call_main" in shown, shown
        assert f"(long) {2 * len(DATA)}" in shown and ": know" in shown
    gdb = subprocess.run(
        ["gdb", "-batch", "-nx", str(program), str(core), "-ex", "info registers rip", "-ex", "bt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"0x{rip:x}" in gdb.stdout and "__libc_start_call_main (main=" in gdb.stdout, gdb.stdout


def test_no_core_writes_neither_cores_nor_syscall_results(tmp_path, program):
    result = record_cli(tmp_path / "b", program, "--no-core", args=[str(program.parent / "data.txt")])
    assert result.returncode == 0, result.stderr
    process = _process(tmp_path / "b")
    assert "coreFile" not in process and "startCoreFile" not in process
    assert "syscallResults" not in process["threads"][0] and "registerStates" not in process["threads"][0]
    assert not any((tmp_path / "b" / name).exists() for name in ("cores", "syscalls", "registers"))


def test_a_circular_buffer_that_dropped_the_start_has_no_start_core(tmp_path):
    """With ``--buffer`` the trace begins where the kept bytes do, after the state where recording started: that core
    would be refused as not where the trace starts (and every value with it); the end core stays.  A buffer that
    kept everything keeps the start core too."""
    binary = tmp_path / "libc_work"
    subprocess.run(["gcc", "-O2", "-g", "-DROUNDS=1", "-o", str(binary), str(SOURCES / "libc_work.c")], check=True)
    for buffer, out in (("1", tmp_path / "cut"), ("4096", tmp_path / "whole")):
        result = record_cli(out, binary, "--buffer", buffer)
        assert result.returncode == 0, result.stderr
    process = _process(tmp_path / "cut")
    assert "startCoreFile" not in process and process["coreFile"] == "cores/end.core"
    assert not (tmp_path / "cut" / "cores" / "start.core").exists()
    (thread,) = api.open_bundle(tmp_path / "cut" / "trace.json").threads
    assert thread.values().registers_at(thread.item_count)["rsp"] is not None
    assert _process(tmp_path / "whole")["startCoreFile"] == "cores/start.core"
    for folder in ("cut", "whole"):
        _known_states_stand_at_their_instructions(tmp_path / folder)


def test_a_small_circular_buffer_keeps_a_psb_to_decode_from(tmp_path):
    """``--buffer 1`` kept 1 KiB of a trace with a PSB every 4096 bytes: the recorder said it succeeded, and the
    bundle was refused as holding no PSB.  The period is a quarter of the buffer now, and one that leaves the
    buffer without a PSB is refused before anything is written."""
    binary = tmp_path / "threads"
    subprocess.run(["gcc", "-O0", "-g", "-pthread", "-o", str(binary), str(SOURCES / "threads.c")], check=True)
    assert record_cli(tmp_path / "small", binary, "--buffer", "1").returncode == 0
    (thread,) = api.open_bundle(tmp_path / "small" / "trace.json").threads
    assert thread.item_count > 100 and not thread.decoded.gaps
    refused = record_cli(tmp_path / "refused", binary, "--buffer", "1", "--psb-period", "4096")
    assert refused.returncode != 0 and "--psb-period 4096 leaves --buffer 1 KiB without a PSB" in refused.stderr
    assert not (tmp_path / "refused").exists()


def test_the_modules_mapped_where_the_recording_ends_are_in_the_bundle(tmp_path):
    """gradebook's recorded stretch runs no libc code before it crashes, and libc was left out (the module map was
    read again only at close, after the process was gone): a core's unwinding stopped at main."""
    binary = tmp_path / "gradebook"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "gradebook.c")], check=True)
    record_cli(tmp_path / "b", binary)
    paths = [module["systemPath"] for module in _process(tmp_path / "b")["modules"]]
    assert any("libc.so" in path for path in paths), paths
    shown = lldb_batch(PIP_LLDB, "command script import lldb_trace", f"trace load {tmp_path / 'b'}", "bt").stdout
    assert "__libc_start_call_main" in shown, shown


def test_known_states_name_the_traces_positions_past_a_gap(tmp_path):
    """An overflow injected where a system call runs: the trace resumes with a TIP.PGE (its IP compressed against
    nothing, as after any OVF: it was compressed against the last IP, and decoding went astray), and the system
    calls' results and register states after the gap name the trace's positions (they counted the lost
    instructions too, and were refused as another recording's)."""
    binary = tmp_path / "crash"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "crash.c")], check=True)
    result = record_cli(tmp_path / "b", binary, "--overflow-at", "700", "--overflow-lost", "50")
    assert result.returncode == 0, result.stderr
    ((_, truth, _),) = list(check_exact(tmp_path / "b" / "trace.json"))  # both libipt decoders: the truth
    ((start, end),) = truth.lost
    values = _known_states_stand_at_their_instructions(tmp_path / "b")
    assert any(values._effect(address).kind == "syscall" for address in truth.addresses[start:end])  # one lost


def test_a_crash_right_after_a_handler_returned_loads(tmp_path):
    """crash_reporter.c's handler returns and the store faults again: the trace ends with rt_sigreturn's syscall,
    the core stands at the store, where rt_sigreturn returned; it was refused as a core taken elsewhere (orig_rax
    is the fault's -1 there, not the call's number)."""
    binary = tmp_path / "crash_reporter"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "crash_reporter.c")], check=True)
    result = record_cli(tmp_path / "b", binary)
    assert result.returncode == 0, result.stderr
    (thread,) = api.open_bundle(tmp_path / "b" / "trace.json").threads
    assert thread.stop.signal == 11 and thread.registers_at(thread.item_count)["rip"] == thread.stop.pc


def test_an_instruction_the_kernel_runs_for_the_program_is_recorded_with_the_next(tmp_path):
    """umip.c's sgdt: under UMIP the kernel emulates it and the step stops after the next instruction; both were
    left out of the history (the jump was taken for a signal's)."""
    binary = tmp_path / "umip"
    subprocess.run(["gcc", "-O1", "-o", str(binary), str(SOURCES / "umip.c")], check=True)
    assert record_cli(tmp_path / "b", binary).returncode == 0
    (thread,) = api.open_bundle(tmp_path / "b" / "trace.json").threads
    shown = [str(item) for item in thread.items(forwards=True) if "`main" in str(item)]
    assert [line.split(": ", 1)[1].split()[0] for line in shown[:3]] == ["sgdtq", "movq", "movq"], shown


def test_a_chain_of_loads_each_seeing_through_a_call_is_no_recursion(tmp_path):
    """see_through.c with both cores and no register states (what a hardware capture saves): 512 loads, each
    learning from the one after it, were checked recursively: RecursionError in every question."""
    binary = tmp_path / "see_through"
    subprocess.run(["gcc", "-O0", "-g", "-static", "-o", str(binary), str(SOURCES / "see_through.c")], check=True)
    assert record_cli(tmp_path / "b", binary).returncode == 0
    bundle = json.loads((tmp_path / "b" / "trace.json").read_text())
    for thread in bundle["processes"][0]["threads"]:
        thread.pop("registerStates")
    (tmp_path / "b" / "cores_only.json").write_text(json.dumps(bundle))
    (thread,) = api.open_bundle(tmp_path / "b" / "cores_only.json").threads
    assert thread.registers_at(0)["rsp"] is not None  # the start core's


def test_memory_a_thread_not_followed_may_write_is_shared(tmp_path):
    """untraced_thread.c recorded with --threads main (the default): its worker writes a global between the main
    thread's store and load, and is joined before the end core. The bundle names it (untracedThreads), and the
    recovery treats memory as shared: the loads were shown the main thread's own stores (111, 333). Without the
    name (what ``pt start`` or a perf.data of one thread saves), the main thread's ``clone3`` says the same from
    there on (thread_creation.py)."""
    binary = tmp_path / "untraced_thread"
    subprocess.run(["gcc", "-O0", "-g", "-pthread", "-o", str(binary), str(SOURCES / "untraced_thread.c")], check=True)
    assert record_cli(tmp_path / "b", binary).returncode == 0
    bundle = json.loads((tmp_path / "b" / "trace.json").read_text())
    assert len(bundle["processes"][0]["untracedThreads"]) == 1
    for thread in bundle["processes"][0]["threads"]:  # what a hardware capture saves: no registers along the way
        thread.pop("registerStates")
    (tmp_path / "b" / "cores_only.json").write_text(json.dumps(bundle))
    bundle["processes"][0].pop("untracedThreads")
    (tmp_path / "b" / "unnamed.json").write_text(json.dumps(bundle))
    (truth,) = api.open_bundle(tmp_path / "b" / "trace.json").threads
    for variant in ("cores_only.json", "unnamed.json"):
        (shown,) = api.open_bundle(tmp_path / "b" / variant).threads
        for position in range(shown.item_count):
            value = shown.registers_at(position)["rax"]
            assert value in (None, truth.registers_at(position)["rax"]), (variant, position)


def test_a_write_to_its_own_memory_file_is_memory_the_kernel_wrote(tmp_path):
    """proc_mem.c pwrites a global through /proc/self/mem: the recorder marks that call unknownMemory (the table
    of what calls write takes it for a file's), so the start state's 0x1111 is not carried past it."""
    binary = tmp_path / "proc_mem"
    subprocess.run(["gcc", "-O0", "-g", "-no-pie", "-o", str(binary), str(SOURCES / "proc_mem.c")], check=True)
    assert record_cli(tmp_path / "b", binary).returncode == 0
    bundle = json.loads((tmp_path / "b" / "trace.json").read_text())
    process = bundle["processes"][0]
    results = json.loads((tmp_path / "b" / process["threads"][0]["syscallResults"]).read_text())
    assert [result["registers"]["rax"] for result in results if result.get("unknownMemory")] == [8]  # pwrite's
    process.pop("coreFile")
    process["threads"][0].pop("registerStates")
    (tmp_path / "b" / "start_only.json").write_text(json.dumps(bundle))
    (thread,) = api.open_bundle(tmp_path / "b" / "start_only.json").threads
    target = ElfInfo(binary).data_symbols(("target",))["target"]  # -no-pie: where it is at run time
    data, known = thread.read_memory_at(thread.item_count, target, 8)
    assert not any(known) or data == (0x2222).to_bytes(8, "little")


def test_code_the_program_patched_is_not_computed_with_the_files_bytes(tmp_path):
    """patched_text.c rewrites the constant add_constant adds: the end core holds the patched page, so the
    recovery from it no longer computes the second call's result with the file's 0x11111111."""
    binary = tmp_path / "patched_text"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(binary), str(SOURCES / "patched_text.c")], check=True)
    assert record_cli(tmp_path / "b", binary).returncode == 0
    bundle = json.loads((tmp_path / "b" / "trace.json").read_text())
    bundle["processes"][0]["threads"][0].pop("registerStates")
    (tmp_path / "b" / "cores_only.json").write_text(json.dumps(bundle))
    (truth,) = api.open_bundle(tmp_path / "b" / "trace.json").threads
    (shown,) = api.open_bundle(tmp_path / "b" / "cores_only.json").threads
    for position in range(shown.item_count):
        for name, value in shown.registers_at(position).items():
            assert value in (None, truth.registers_at(position)[name]), (position, name)
    # what LLDB and a gdb-remote client read there at the end is the core's code, not the file's (they were given
    # the file's bytes first: 0x11111111 after the program had written 0x22222222)
    start = ElfInfo(binary).symbol("add_constant")
    core = open_core(tmp_path / "b" / "cores" / "end.core")
    load = next(m.start for m in core.mapped_files if m.path == str(binary) and m.offset == 0)
    patched = core.read(load + start, 16)
    assert b"\x22\x22\x22\x22" in patched
    commands = ["command script import lldb_trace", f"trace load {tmp_path / 'b'}", f"x/16xb {load + start:#x}"]
    shown_bytes = re.findall(r"0x([0-9a-f]{2})\b", lldb_batch(PIP_LLDB, *commands).stdout.split("x/16xb")[-1])
    assert bytes(int(b, 16) for b in shown_bytes[-16:]) == patched
    replay = Replay(api.open_bundle(tmp_path / "b" / "trace.json"))
    assert replay.read_memory(load + start, 16) == patched


def test_an_overflow_that_cannot_be_injected_says_so(tmp_path):
    """--overflow-lost alone is refused before recording; --overflow-at past the recording's end is a note."""
    binary = tmp_path / "crash"
    subprocess.run(["gcc", "-O0", "-o", str(binary), str(SOURCES / "crash.c")], check=True)
    alone = record_cli(tmp_path / "a", binary, "--overflow-lost", "5")
    assert alone.returncode == 1 and not (tmp_path / "a").exists()
    assert (
        alone.stderr == "error: --overflow-lost goes with --overflow-at: it says how much the injected overflow loses\n"
    )
    late = record_cli(tmp_path / "b", binary, "--overflow-at", "99999999")
    assert late.returncode == 0, late.stderr
    assert (
        "note: --overflow-at 99999999 injected nothing: no thread reached instruction 99999999 (numbered from 0;"
        in (late.stderr)
    )


def _known_states_stand_at_their_instructions(folder):
    """Every system call's result is at a ``syscall`` of the trace, and the register states load (their pcs are
    checked against the trace's addresses)."""
    (thread,) = api.open_bundle(folder / "trace.json").threads
    values = thread.values()
    assert values._recorded is not None and len(values._recorded.positions) > 1000
    results = [position for position, result in values.syscalls.items() if not result.before]
    assert results and all(values._effect(values.addresses[position]).kind == "syscall" for position in results)
    return values


def test_perf_format_writes_the_cores_beside_perf_data(tmp_path, program):
    result = record_cli(tmp_path / "b", program, "--format", "perf", args=[str(program.parent / "data.txt")])
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "b" / "cores").iterdir()) == ["end.core", "start.core"]
    assert (tmp_path / "b" / "perf.data").exists() and not (tmp_path / "b" / "syscalls").exists()


def test_ctrl_c_ends_with_a_core_where_the_trace_ends(tmp_path):
    endless = tmp_path / "endless"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(endless), str(SOURCES / "endless.c")], check=True)
    result = record_cli(tmp_path / "b", endless, args=["300"])
    assert result.returncode == 0, result.stderr
    core = open_core(tmp_path / "b" / "cores" / "end.core")
    rounds = struct.unpack("<Q", core.read(_symbol_address(endless, core, "rounds"), 8))[0]
    assert rounds >= 300
    # The thread was stepping when Ctrl-C came: the step is finished and traced, the core is just past it.
    last = truth_of(tmp_path / "b" / "trace.json", core.threads[0].tid).addresses[-1]
    assert 0 < core.threads[0].registers["rip"] - last < 16


def test_a_signal_frame_is_kept_as_the_kernel_wrote_it(tmp_path):
    """A handled signal: the kernel wrote the frame below the interrupted stack (the return trampoline's address,
    the interrupted registers).  The recorder keeps it, known before the handler's first instruction: its
    ``pretcode`` is glibc's ``__restore_rt`` (the program's symbol) and its saved rip is where the trace resumes
    after the handler's rt_sigreturn."""
    import lldb_trace.api as pt

    binary = tmp_path / "signal_handler"
    subprocess.run(["gcc", "-O0", "-g", "-static", "-o", str(binary), str(SOURCES / "signal_handler.c")], check=True)
    done = record_cli(tmp_path / "rec", binary, "--until", "the_end")
    assert done.returncode == 0, done.stderr
    thread = pt.open_bundle(tmp_path / "rec").threads[0]
    [syscalls] = (tmp_path / "rec" / "syscalls").iterdir()
    [frame] = [entry for entry in json.loads(syscalls.read_text()) if "signalFrame" in entry]
    handler = frame["instruction"]
    assert thread.locate(thread.history.pc_at(handler)).function == "on_signal"
    rsp = thread.registers_at(handler)["rsp"]
    data, mask = thread.read_memory_at(handler, rsp, 8 + 8 + 168 + 8)
    assert mask == b"\xff" * len(mask)
    with open(binary, "rb") as file:
        restore = ELFFile(file).get_section_by_name(".symtab").get_symbol_by_name("__restore_rt")[0]["st_value"]
    assert struct.unpack_from("<Q", data, 0)[0] == restore
    returns = [m.index for m in thread.find(function="__restore_rt")]
    [back] = [index for index in returns if index > handler]
    resumed = thread.history.pc_at(back + 2)  # __restore_rt: mov $15, %rax; syscall (rt_sigreturn)
    assert struct.unpack_from("<Q", data, 8 + 40 + 16 * 8)[0] == resumed  # uc_mcontext.gregs[REG_RIP]


def test_the_end_of_history_stands_where_the_exits_core_does_after_moving_too(recorded):
    """An exit's core stands after its ``syscall``, where the trace ends.  At load frame #0 was the core's pc; once
    the thread had moved and come back the end showed the syscall itself, the trace's frames ([synthetic]) and no
    value, while ``register read rip`` gave the core's."""
    rip = open_core(recorded / "cores/end.core").threads[0].registers["rip"]
    (thread,) = api.open_bundle(recorded / "trace.json").threads
    assert thread.registers_at(thread.item_count)["rip"] == rip
    commands = ["command script import lldb_trace", f"trace load {recorded}", "pt goto 0", "pt goto end", "bt"]
    shown = lldb_batch(PIP_LLDB, *commands).stdout
    ends = shown[shown.rindex("(lldb) pt goto end") :]
    assert f"frame #0: 0x{rip:016x}" in ends and "[synthetic]" not in ends, ends
