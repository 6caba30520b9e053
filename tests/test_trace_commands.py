"""trace load / schema / dump through a real in-process LLDB, checked through the SB API."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from support.bundle_cases import CASES, STATIC, break_bundle, make_good_bundle
from support.paths import SOURCES, TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.committed_bundles import loadable  # noqa: E402
from support.lldb_batch import LOAD_PLUGIN, lldb_batch  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.elf_info import ElfInfo  # noqa: E402
from lldb_trace.trace_files import load_trace  # noqa: E402

BUNDLES = sorted(p.parent for p in TRACES.glob("*/trace.json"))


def expected_end(folder, tid):
    """Where the thread must be shown stopped: the faulting pc of a crash, else its last instruction."""
    if folder.name == "sample":
        return int((folder / "expected_addresses.txt").read_text().split()[-1], 16)
    truth = GroundTruth.read(folder / "ground_truth" / f"{tid}.txt")
    if " at 0x" in truth.ended:
        return int(truth.ended.rsplit(" at ", 1)[1], 16)
    return truth.addresses[-1]


def function_at(module_path, file_address):
    """The ELF function symbol covering ``file_address``, read with pyelftools (independent of LLDB)."""
    starts = sorted(
        (address, name) for name, address in ElfInfo(module_path).symbols.items() if address <= file_address
    )
    return starts[-1][1]


@pytest.mark.parametrize("folder", BUNDLES, ids=lambda p: p.name)
def test_trace_load_gives_a_stopped_process_like_a_core_file(session, folder):
    loadable(folder)
    output = session.ok(f"pt load {folder / 'trace.json'}")
    bundle = load_trace(folder)
    [process_spec] = bundle.processes
    assert output.splitlines()[0] == f"Loaded {folder / 'trace.json'} (intel-pt-lldb, {bundle.cpu}):"
    assert session.debugger.GetNumTargets() == 1
    target = session.target
    process = target.GetProcess()
    assert process.GetProcessID() == process_spec.pid and process.GetState() == lldb.eStateStopped
    assert sorted(thread.GetThreadID() for thread in process) == sorted(t.tid for t in process_spec.threads)
    for spec in process_spec.modules:  # every module at exactly its load address
        module = target.FindModule(lldb.SBFileSpec(str(spec.path)))
        assert module.IsValid(), spec.path
        assert module.GetObjectFileHeaderAddress().GetLoadAddress(target) == spec.load_address
    for thread in process:
        pc = thread.GetFrameAtIndex(0).GetPC()
        if folder.name == "missing-module":  # the trace ends inside the module left out of the bundle
            assert not target.ResolveLoadAddress(pc).GetModule().IsValid()
            warning = f"    warning: thread {thread.GetThreadID()}: its trace runs code at 0x7ffff7e14fd0, which no "
            assert warning + "module covers (gaps in the trace): add the module mapped there, or check" in output
            continue
        assert "warning" not in output
        assert pc == expected_end(folder, thread.GetThreadID())
        address = target.ResolveLoadAddress(pc)
        module_spec = next(
            m for m in process_spec.modules if m.path == Path(address.GetModule().GetFileSpec().fullpath)
        )
        assert module_spec.load_address <= pc < module_spec.load_address + module_spec.size
        if module_spec == process_spec.modules[0]:  # the program keeps its full symbol table; system libraries don't
            file_address = pc - module_spec.load_address + ElfInfo(module_spec.path).first_load_vaddr
            assert address.GetSymbol().GetName() == function_at(module_spec.path, file_address)


def test_a_module_at_a_wrong_load_address_is_named_in_a_warning(session, tmp_path):
    """crash's program moved to 0x500000: the trace runs code at 0x401xxx, which no module covers now."""
    folder = tmp_path / "moved"
    shutil.copytree(TRACES / "crash", folder)
    document = json.loads((folder / "trace.json").read_text())
    document["processes"][0]["modules"][0]["loadAddress"] = "0x500000"
    (folder / "trace.json").write_text(json.dumps(document))
    output = session.ok(f"pt load {folder}")
    (warning,) = [line.strip() for line in output.splitlines() if "warning" in line]
    assert warning.startswith("warning: thread 5707: its trace holds no instructions: it runs code at 0x401")
    assert warning.endswith("which no module covers (gaps in the trace): add the module mapped there, or check the "
                            "modules' loadAddress values")  # fmt: skip


def test_post_mortem_commands_work_on_the_crash(session):
    folder = TRACES / "crash"
    loadable(folder)
    compiled_in = "/work/main/test_traces/src"  # where the committed programs were built (their DWARF says so)
    session.ok(f"settings set target.source-map {compiled_in} {SOURCES}")
    loaded = session.ok(f"pt load {folder}")
    assert "frame #0: 0x000000000040113e crash`descend" in loaded and "-> 8   \t    return *pointer;" in loaded
    assert "12  \tint main(void) {" in session.ok("source list")  # continues after the lines shown
    assert "target #0: " in session.ok("target list") and "state=stopped" in session.ok("target list")
    assert "* thread #1: tid = 5707, 0x000000000040113e crash`descend" in session.ok("thread list")
    assert "frame #0: 0x000000000040113e crash`descend" in session.ok("bt")
    assert "crash`descend" in session.ok("image lookup -a 0x40113e")
    disassembly = session.ok("disassemble -p -c 2")
    assert "->  0x40113e <+" in disassembly
    assert "rip = 0x000000000040113e" in session.ok("register read pc")
    modules = session.ok("image list")
    assert "0x0000000000400000 " + str(folder / "modules" / "crash") in modules
    error = session.handle("memory read 0x7fffffffe000")
    assert "memory at 0x7fffffffe000 is not known at this position" in error.GetError()


def test_threads_can_be_selected(session):
    folder = TRACES / "threads"
    loadable(folder)
    session.ok(f"trace load {folder}")
    process = session.target.GetProcess()
    assert process.GetSelectedThread().GetThreadID() == process.GetProcessID()  # the main thread
    session.ok("thread select 2")
    assert process.GetSelectedThread().GetIndexID() == 2
    assert f"tid = {process.GetSelectedThread().GetThreadID()}" in session.ok("thread info")


def test_several_bundles_give_several_targets_and_dump_follows_the_selection(session, tmp_path):
    first = make_good_bundle(tmp_path / "first")
    second = make_good_bundle(tmp_path / "second")
    document = json.loads(second.read_text())
    document["processes"][0]["pid"] = 77
    second.write_text(json.dumps(document))
    session.ok(f"trace load {first}")
    session.ok(f"trace load {second}")
    assert session.debugger.GetNumTargets() == 2
    assert "Process 77 " in session.ok("pt dump")
    session.ok("target select 0")
    assert "Process 5668 " in session.ok("pt dump")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_failed_load_leaves_no_target(session, tmp_path, case):
    path, expected = break_bundle(tmp_path / "bundle", case)
    result = session.handle(f'pt load "{path}"')
    assert not result.Succeeded()
    assert expected in result.GetError() and result.GetError().count("\n") == 1
    assert session.debugger.GetNumTargets() == 0
    session.handle(f'trace load "{path}"')  # routed: the error goes to the debugger's error stream
    assert expected in session.streams()[1]
    assert session.debugger.GetNumTargets() == 0


def test_dump_session_info(session, tmp_path):
    path = make_good_bundle(tmp_path)
    session.ok(f"trace load {path}")
    text = session.ok("pt dump")
    assert "Trace technology: intel-pt" in text and "CPU: Intel family 6 model 85 stepping 4" in text
    assert f"      file: {tmp_path / 'modules' / 'static'}" in text
    assert "      load address: 0x400000, size: " in text
    trace_size = (tmp_path / "traces" / "5668.ipt").stat().st_size
    assert f"trace file: {tmp_path / 'traces' / '5668.ipt'} ({trace_size} bytes)" in text
    assert "instructions: 1182, errors: 0, events: " in text  # the ground truth has 1182
    info = json.loads(session.ok("pt dump --json"))
    assert info["threads"][0]["decoded"]["instructions"] == 1182
    assert info["modules"][0]["loadAddress"] == "0x400000"
    assert info["modules"][0]["uuid"] == ElfInfo(STATIC / "modules" / "static").build_id
    assert "bundleText" not in info
    verbose = session.ok("pt dump --verbose")
    assert verbose.rstrip().endswith(path.read_text().rstrip())


def test_dump_threads_by_tid(session):
    folder = TRACES / "threads"
    loadable(folder)
    session.ok(f"trace load {folder}")
    tids = [t.tid for t in load_trace(folder).processes[0].threads]
    default = json.loads(session.ok("pt dump --json"))
    assert [t["tid"] for t in default["threads"]] == [session.target.GetProcess().GetSelectedThread().GetThreadID()]
    chosen = json.loads(session.ok(f"pt dump --json -t {tids[0]} -t {tids[2]} -t {tids[0]}"))
    assert [t["tid"] for t in chosen["threads"]] == [tids[0], tids[2]]
    error = session.handle("pt dump -t 1")
    assert (
        error.GetError() == f"error: process 5674 has no traced thread 1 (its threads: {', '.join(map(str, tids))})\n"
    )
    info = json.loads(session.ok("pt dump --json -t " + " -t ".join(map(str, tids))))
    assert all(t["decoded"]["instructions"] > 0 for t in info["threads"])  # thread list decoded them all


def test_thread_trace_dump_info_is_routed_with_thread_indexes(session, tmp_path):
    folder = TRACES / "threads"
    loadable(folder)
    session.ok(f"trace load {folder}")
    session.handle("thread trace dump info --json 2")
    out = session.streams()[0]
    second = session.target.GetProcess().GetThreadByIndexID(2).GetThreadID()
    assert f'"tid": {second},' in out and '"index": 2' in out


def test_dump_without_a_trace_says_how_to_get_one(session):
    assert session.handle("pt dump").GetError() == "error: no target: load a trace with 'trace load BUNDLE'\n"
    session.ok(f"target create {STATIC / 'modules' / 'static'}")
    assert "target #0 has no trace: load one with 'trace load BUNDLE'" in session.handle("pt dump").GetError()


def test_schema_commands(session):
    assert session.ok("pt schema intel-pt").startswith("// intel-pt trace bundle (the processor-trace RFC's format)")
    everything = session.ok("pt schema all")
    assert '"cpuInfo": {' in everything and '"pt_cpu": {' in everything
    assert (
        session.handle("pt schema perf")
        .GetError()
        .startswith("error: no trace schema named 'perf': give intel-pt, intel-pt-lldb or all")
    )
    session.handle("trace schema intel-pt-lldb")
    assert '"iptTrace"?: string' in session.streams()[0]


def test_help_and_completion(session):
    assert "Load trace bundles" in session.ok("help pt load")
    assert "--tid <thread-id>" in session.ok("help pt dump")
    matches = lldb.SBStringList()
    session.debugger.GetCommandInterpreter().HandleCompletion("pt schema intel-pt-", 19, 0, -1, matches)
    assert [matches.GetStringAtIndex(i) for i in range(1, matches.GetSize())] == ["intel-pt-lldb"]


def test_import_announces_routing_once_per_import(session):
    out = session.streams()[0]
    line = "lldb_trace: trace load|schema|dump|save, thread trace dump info|instructions|function-calls run"
    assert out.count(line) == 1


def test_routing_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("LLDB_TRACE_NO_ROUTING", "1")
    session = Session(tmp_path)
    try:
        assert session.streams() == ("", "")
        session.handle("trace schema intel-pt")
        assert "pt_cpu" not in session.streams()[0]  # LLDB's own command ran
        assert session.ok("pt schema intel-pt").startswith("// intel-pt")
    finally:
        session.close()


def test_routed_errors_are_printed_as_errors_in_batch_mode(tmp_path):
    binary = Path(sys.executable).parent / "lldb"
    if not binary.exists():
        pytest.skip("no lldb binary beside this Python")
    result = lldb_batch(str(binary), "command script import lldb_trace", f"trace load {tmp_path / 'absent.json'}")
    assert f"error: {tmp_path / 'absent.json'}: no such bundle file" in result.stderr


def test_plugin_works_in_debians_lldb_22(tmp_path):
    """The same flow in another LLDB (22, with its own intel-pt plug-in, which routing replaces)."""
    binary = shutil.which("lldb-22")
    if binary is None:
        pytest.skip("Debian's lldb-22 is not installed")
    path = make_good_bundle(tmp_path)
    result = lldb_batch(
        binary,
        *LOAD_PLUGIN,
        f"trace load {path}",
        "thread list",
        "trace dump",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "* thread #1: tid = 5668, 0x0000000000401024 static`sys3" in result.stdout
    assert "instructions: 1182, errors: 0" in result.stdout


@pytest.mark.parametrize("damage", ["truncated", "psb then noise"])  # noise without a PSB: bundle_cases.py
def test_corrupt_trace_loads_and_decodes_to_gaps(session, tmp_path, damage):
    path = make_good_bundle(tmp_path)
    trace = tmp_path / "traces" / "5668.ipt"
    good = trace.read_bytes()
    damaged = {
        "truncated": good[: len(good) // 2],
        "psb then noise": good[:16] + bytes((i * 31 + 7) % 256 for i in range(2048)),
    }[damage]
    trace.write_bytes(damaged)
    session.ok(f"pt load {path}")
    pc = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetPC()
    info = json.loads(session.ok("pt dump --json"))["threads"][0]["decoded"]
    if damage == "truncated":  # the first half decodes; the thread stops where it ends
        assert info["instructions"] > 0 and pc != 0
    else:
        assert info["errors"] > 0 or info["instructions"] == 0


def test_load_needs_a_bundle(session):
    result = session.handle("pt load")
    assert result.GetError().startswith("error: give the bundle to load: pt load BUNDLE.json")
    assert session.debugger.GetNumTargets() == 0


def test_kernel_image_gets_a_target_of_its_own(session, tmp_path):
    path = make_good_bundle(tmp_path)
    document = json.loads(path.read_text())
    document["kernel"] = {"file": "modules/static", "loadAddress": "0xffffffff81000000"}
    path.write_text(json.dumps(document))
    session.ok(f"pt load {path}")
    assert session.debugger.GetNumTargets() == 2
    kernel = session.debugger.GetTargetAtIndex(1)
    module = kernel.GetModuleAtIndex(0)
    assert module.GetObjectFileHeaderAddress().GetLoadAddress(kernel) == 0xFFFFFFFF81000000


def _copied(folder, tmp_path):
    """A copy of the committed bundle ``folder`` with module and trace paths pointing back into the repository."""
    document = json.loads((folder / "trace.json").read_text())
    for process in document["processes"]:
        for module in process["modules"]:
            if "file" in module:
                module["file"] = str(folder / module["file"])
        for thread in process["threads"]:
            thread["iptTrace"] = str(folder / thread["iptTrace"])
    return document


def test_load_selects_the_thread_a_signal_stopped(session, tmp_path):
    """Live LLDB selects the thread that crashed; a loaded trace does too, not the main thread."""
    folder = TRACES / "threads"
    loadable(folder)
    document = _copied(folder, tmp_path)
    worker = document["processes"][0]["threads"][1]
    worker["stopReason"] = {"signal": 11, "description": "signal SIGSEGV: address not mapped to object"}
    (tmp_path / "trace.json").write_text(json.dumps(document))
    output = session.ok(f"pt load {tmp_path / 'trace.json'}")
    thread = session.target.GetProcess().GetSelectedThread()
    assert thread.GetThreadID() == worker["tid"] and "signal SIGSEGV" in output


def test_a_thread_without_instructions_says_so_instead_of_reading_address_zero(session, tmp_path):
    document = _copied(TRACES / "static", tmp_path)
    document["processes"][0]["threads"].append({"tid": 99999})
    (tmp_path / "trace.json").write_text(json.dumps(document))
    session.ok(f"trace load {tmp_path / 'trace.json'}")
    listed = session.ok("thread list")
    assert "tid = 99999, 0x0000000000000000, stop reason = no trace of its own: where it stopped is unknown" in listed
    result = session.handle("thread select 2")
    _out, err = session.streams()
    assert result.Succeeded() and "error" not in result.GetError() + err


def test_load_warns_of_a_truncated_trace(session, tmp_path):
    folder = TRACES / "crash"
    loadable(folder)
    shutil.copytree(folder, tmp_path / "crash")
    (trace,) = (tmp_path / "crash" / "traces").iterdir()
    trace.write_bytes(trace.read_bytes()[:200])  # inside a TIP packet
    output = session.ok(f"pt load {tmp_path / 'crash'}")
    assert "    warning: thread 5707: the trace is truncated: it ends inside a tip packet at offset 0xc6" in output
