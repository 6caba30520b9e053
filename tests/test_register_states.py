"""``lldb-trace record`` keeps the registers before every instruction (``registerStates``): every register is known
at every position, equal to an independent single-stepping of the same program, and the recovery from the end
core alone never disagrees with them (the exact reference the issue asks for)."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from support.paths import SOURCES
from support.stepped_truth import step_program

from lldb_trace import api
from lldb_trace.values.machine_state import GENERAL, TRACKED
from lldb_trace.values.process_values import ValuesError
from lldb_trace.values.recovery import ThreadValues
from lldb_trace.values.register_states import RegisterStatesError, read_register_states, register_states_bytes
from lldb_trace.values.syscall_file import SyscallResultsError

STEPS = 20_000
# Both runs get this environment (pytest's own variables change from test to test) and ASLR off: their stacks are
# laid out alike.
ENV = {"PATH": os.environ["PATH"], "LC_ALL": "C"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("register_states")
    binary = folder / "libc_work"
    source = SOURCES / "libc_work.c"
    subprocess.run(["gcc", "-g", "-O2", "-DROUNDS=2", "-o", str(binary), str(source)], check=True)
    out = folder / "rec"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(out), "--", str(binary)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=ENV)
    assert result.returncode == 0, result.stderr
    return binary, out / "trace.json"


def test_states_after_a_decode_error_are_not_placed_by_count(tmp_path):
    """A recorder counts the instructions its trace holds; a decode error (here 24 bytes of a recording's trace
    overwritten) loses instructions nobody counted, so its states after the error name no position: they were
    either refused whole as another recording's or, where the code repeats, shown at the wrong positions.  Before
    the error they are used; after it the values are the recovery's, and right."""
    binary = tmp_path / "basic"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(binary), str(SOURCES / "basic.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "rec"), "--psb-period", "256"]
    subprocess.run([*command, "--", str(binary)], check=True, capture_output=True, timeout=300, env=ENV)
    shutil.copytree(tmp_path / "rec", tmp_path / "cut")
    (stream,) = (tmp_path / "cut" / "traces").iterdir()
    data = bytearray(stream.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 24] = b"\xff" * 24
    stream.write_bytes(bytes(data))
    (truth,) = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    (thread,) = api.open_bundle(tmp_path / "cut" / "trace.json").threads
    gap = thread.decoded.gaps[0].index
    assert gap + 100 < thread.item_count  # decoding went on at a later PSB
    lost = truth.item_count - thread.item_count  # both end where the program ended: the part after it lines up
    after = range(gap + 1, thread.item_count)
    assert [thread.registers_at(p)["rip"] for p in after] == [truth.registers_at(p + lost)["rip"] for p in after]
    assert thread.values()._recorded.at(gap - 1) is not None and thread.values()._recorded.at(gap + 1) is None
    wrong = []
    for position in [*range(0, gap), *range(gap + 1, thread.item_count + 1)]:
        there = position if position < gap else position + lost
        shown, seen = thread.registers_at(position), truth.registers_at(there)
        wrong += [(position, name) for name in GENERAL if shown[name] is not None and shown[name] != seen[name]]
    assert wrong == []


def test_the_bundle_names_each_threads_register_states(recorded):
    _, bundle = recorded
    (thread,) = json.loads(bundle.read_text())["processes"][0]["threads"]
    assert thread["registerStates"] == f"registers/{thread['tid']}.npz"
    with np.load(bundle.parent / thread["registerStates"]) as saved:
        assert list(saved["names"]) == list(TRACKED) and saved["registers"].shape[1] == len(TRACKED)


def test_every_register_is_known_at_every_position_and_matches_single_stepping(recorded):
    binary, bundle = recorded
    thread = api.open_bundle(bundle).threads[0]
    truth = step_program(binary, STEPS, env=ENV)
    assert thread.values().addresses[:STEPS] == truth.addresses
    same = total = 0
    for position in range(0, STEPS, 7):
        shown = thread.registers_at(position)
        assert None not in shown.values(), position
        expected = truth.registers[position]
        assert (shown["rip"], shown["rsp"], shown["rbp"]) == (expected["rip"], expected["rsp"], expected["rbp"])
        same += sum(shown[name] == expected[name] for name in GENERAL)
        total += len(GENERAL)
    # Both run with ASLR off from the same path and environment; only what derives from the kernel's
    # AT_RANDOM bytes (the stack protector's canary, the pointer guard) differs from run to run.
    assert same / total > 0.97


def test_the_recovery_from_the_end_core_alone_agrees_with_them(recorded):
    _, bundle = recorded
    thread = api.open_bundle(bundle).threads[0]
    seen = thread.values()
    alone = ThreadValues(
        seen.addresses, seen._read_code, end=seen.end, end_after_last=seen.end_after_last
    )  # the same trace and core, without the recorder's registers
    known = 0
    for position in range(0, seen.count, 3):
        recovered, recorded_there = alone.registers_at(position), seen.registers_at(position)
        for name, value in recovered.items():
            if value is not None:
                known += 1
                assert value == recorded_there[name], (position, name)
    assert known and alone.conflicts == 0 and seen.conflicts == 0


def test_memory_is_known_where_the_recorded_registers_give_every_address(recorded):
    binary, bundle = recorded
    thread = api.open_bundle(bundle).threads[0]
    truth = step_program(binary, STEPS, env=ENV)
    known = total = differing = 0
    for position, address, data in truth.samples[-40:]:  # 256 bytes around rsp, over the last 1,000 positions
        shown, mask = thread.read_memory_at(position, address, len(data))
        known += sum(1 for m in mask if m)
        total += len(data)
        differing += sum(s != d for s, d, m in zip(shown, data, mask, strict=True) if m)
    assert differing == 0
    assert known / total > 0.7  # the 128 bytes below rsp are mostly dead: nothing there is known


def test_trace_save_keeps_them_and_register_read_shows_every_register(recorded, session, tmp_path):
    _, bundle = recorded
    session.ok(f"trace load {bundle}")
    session.ok(f"trace save {tmp_path / 'again'}")
    (thread,) = json.loads((tmp_path / "again" / "trace.json").read_text())["processes"][0]["threads"]
    saved, original = tmp_path / "again" / thread["registerStates"], bundle.parent / thread["registerStates"]
    assert saved.read_bytes() == original.read_bytes()
    session.ok(f"trace load {tmp_path / 'again' / 'trace.json'}")
    session.ok("pt goto 5000")
    shown = session.ok("register read")
    assert "unavailable" not in shown and all(f"{name} = 0x" in shown for name in GENERAL)


def test_a_damaged_register_states_file_is_one_line_naming_it(recorded, tmp_path):
    _, bundle = recorded
    copy = tmp_path / "b"
    subprocess.run(["cp", "-r", str(bundle.parent), str(copy)], check=True)
    (states,) = (copy / "registers").iterdir()
    states.write_bytes(states.read_bytes()[:100])
    with pytest.raises(RegisterStatesError, match=f"{states} is not a register states file"):  # at load, not later
        api.open_bundle(copy / "trace.json")
    states.write_bytes((copy / "trace.json").read_bytes())  # another kind of file: no advice to unpickle it
    with pytest.raises(RegisterStatesError, match="record again, or remove the thread's registerStates"):
        api.open_bundle(copy / "trace.json")


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ('[{"instruction": "x", "registers": 5}]', "entry 0 has no instruction count"),
        ('[{"instruction": 3, "registers": {"rax": 1}, "memory": [[16, "zz"]]}]', "memory is not [address, hex"),
        ('[{"instruction": 3, "registers": {"nope": 1}}]', "registers are not register names with values"),
        ("{}", "it is not a list of entries"),
        ("[", "cannot read the system calls' results"),
        ('[{"instruction": 3, "registers": {"rax": 18446744073709551681}}]', "registers are not register names"),
        ('[{"instruction": 3, "memory": [[18446744073709551615, "0000"]]}]', "within 64-bit addresses"),
        ('[{"instruction": 3, "memory": [[16, "0000"], [17, "11"]]}]', "entry 0's memory pieces overlap"),
        ('[{"instruction": 3}, {"instruction": 3}]', "entry 1 is a second call at instruction 3"),
        ("[" * 100_000, "it nests too deeply"),
    ],
    ids=["count", "hex", "register", "object", "json", "65-bit", "wrap", "overlap", "twice", "deep"],
)
def test_a_damaged_system_call_results_file_is_refused_at_load_naming_it(recorded, tmp_path, entries, problem):
    """Such a file made an internal error of the first command that asked for a value (or was taken silently)."""
    _, bundle = recorded
    copy = tmp_path / "b"
    subprocess.run(["cp", "-r", str(bundle.parent), str(copy)], check=True)
    (results,) = (copy / "syscalls").iterdir()
    results.write_text(entries)
    with pytest.raises(SyscallResultsError, match=re.escape(problem)) as raised:
        api.open_bundle(copy / "trace.json")
    assert str(results) in str(raised.value) and "\n" not in str(raised.value)


def test_register_states_of_another_recording_are_refused(recorded, tmp_path):
    _, bundle = recorded
    copy = tmp_path / "b"
    subprocess.run(["cp", "-r", str(bundle.parent), str(copy)], check=True)
    (states,) = (copy / "registers").iterdir()
    with np.load(states) as saved:
        instructions, rows, names, tid = saved["instruction"], saved["registers"].copy(), saved["names"], saved["tid"]
    rows[1000, list(names).index("rip")] += 1
    states.write_bytes(register_states_bytes(int(tid[0]), instructions, rows))
    thread = api.open_bundle(copy / "trace.json").threads[0]
    with pytest.raises(ValuesError, match=r"at position 1000 rip is .* the states are of another recording"):
        thread.registers_at(5)


def test_another_threads_register_states_are_refused_at_load(recorded, tmp_path):
    """Each file names its thread: one given to another thread's entry passed every check where no core held that
    thread at the same pc (a tester swapped two workers' files: 6,643 wrong values each).  A file written before
    files named their thread is still read."""
    _, bundle = recorded
    copy = tmp_path / "b"
    subprocess.run(["cp", "-r", str(bundle.parent), str(copy)], check=True)
    (states,) = (copy / "registers").iterdir()
    with np.load(states) as saved:
        instructions, rows, names, tid = saved["instruction"], saved["registers"], saved["names"], saved["tid"]
    states.write_bytes(register_states_bytes(int(tid[0]) + 1, instructions, rows, tuple(str(n) for n in names)))
    problem = f"holds the registers of thread {int(tid[0]) + 1}, but the bundle gives it to thread {int(tid[0])}"
    with pytest.raises(RegisterStatesError, match=problem):
        api.open_bundle(copy / "trace.json")
    with states.open("wb") as file:  # no tid: as the recorder wrote them before
        np.savez_compressed(file, instruction=instructions, registers=rows, names=names)
    assert api.open_bundle(copy / "trace.json").threads[0].registers_at(5000)["rsp"] is not None


def test_register_states_the_cores_contradict_are_refused_at_load(recorded, tmp_path):
    """Where a state stands at a core's pc, its general registers are the core's: another run's states (rsp
    shifted, as a different environment shifts it) were shown at every past position, the cores aside."""
    _, bundle = recorded
    copy = tmp_path / "b"
    subprocess.run(["cp", "-r", str(bundle.parent), str(copy)], check=True)
    (states,) = (copy / "registers").iterdir()
    with np.load(states) as saved:
        instructions, rows, names = saved["instruction"], saved["registers"].copy(), [str(n) for n in saved["names"]]
        tid = int(saved["tid"][0])
    rows[:, names.index("rsp")] += 0x100
    states.write_bytes(register_states_bytes(tid, instructions, rows, tuple(names)))
    with pytest.raises(RegisterStatesError, match=r"its rsp is .* the states and the core are of different runs"):
        api.open_bundle(copy / "trace.json")
    keep = [k for k, name in enumerate(names) if name != "rip"]  # without rip nothing ties a state to the trace
    states.write_bytes(register_states_bytes(tid, instructions, rows[:, keep], tuple(names[k] for k in keep)))
    with pytest.raises(RegisterStatesError, match="it has no rip"):
        api.open_bundle(copy / "trace.json")


def test_a_register_states_file_larger_than_any_recording_is_refused_unpacked(tmp_path):
    """A compressed file that unpacks to terabytes took minutes and gigabytes before it was refused."""
    huge = tmp_path / "huge.npz"
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 20), np.uint64)) | {"shape": (1 << 40, 20)}
    with zipfile.ZipFile(huge, "w") as archive, archive.open("registers.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
    with pytest.raises(RegisterStatesError, match=r"registers.npy is of shape \(1099511627776, 20\), larger than"):
        read_register_states(huge)
    flat = tmp_path / "flat.npz"
    np.savez(flat, instruction=np.uint64(1), registers=np.zeros((1, 1), np.uint64), names=np.array("rip"))
    with pytest.raises(RegisterStatesError, match="is not a register states file"):  # 0-d arrays: a TypeError
        read_register_states(flat)


def test_threads_that_exited_before_the_end_core_have_their_registers(tmp_path):
    """threads.c's workers are gone when the end core is written: their register states are all that is known."""
    binary = tmp_path / "threads"
    subprocess.run(["gcc", "-g", "-O0", "-pthread", "-o", str(binary), str(SOURCES / "threads.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--threads", "all", "-o", str(tmp_path / "rec")]
    result = subprocess.run([*command, "--", str(binary)], capture_output=True, text=True, timeout=300, env=ENV)
    assert result.returncode == 0, result.stderr
    threads = api.open_bundle(tmp_path / "rec" / "trace.json").threads
    assert len(threads) == 4
    pid = json.loads((tmp_path / "rec" / "trace.json").read_text())["processes"][0]["pid"]
    tids = [thread.tid for thread in threads]  # listed (and numbered in LLDB) as a core lists them: the main
    assert tids == [pid, *sorted(tids[1:])]  # thread first, then the others as they were made (the newest came first)
    for thread in threads:
        shown = thread.registers_at(thread.item_count // 2)
        assert None not in shown.values(), thread.tid


def test_a_crash_cores_resume_flag_is_not_carried_before_the_fault(tmp_path):
    """The kernel sets RF in the state it saves at a fault (the core); the instructions before it completed, and
    each completed instruction clears RF: from the core alone as with the recorder's states, rflags before the
    fault has no RF, and nothing disagrees."""
    binary = tmp_path / "crash"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(binary), str(SOURCES / "crash.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(tmp_path / "rec"), "--", str(binary)]
    subprocess.run(command, capture_output=True, text=True, timeout=300, env=ENV)
    seen = api.open_bundle(tmp_path / "rec" / "trace.json").threads[0].values()
    alone = ThreadValues(seen.addresses, seen._read_code, end=seen.end, end_after_last=seen.end_after_last)
    flags = seen.end.registers["rflags"]
    assert flags & 0x10000
    before = seen.count - 1
    assert alone.registers_at(before)["rflags"] == flags & ~0x10000 == seen.registers_at(before)["rflags"]
    for values in (alone, seen):
        values.memory_at(0, 0, 1)  # every window solved
        assert values.conflicts == 0
