"""Where a recording's trace ends, when its file was cut short: the known states at the end (the recorder's
registers, the end core) are not taken for the state after the trace's last instruction unless the trace says
the thread stood there."""

import json
import shutil
import subprocess

import pytest
from support.core_cases import record
from support.paths import SOURCES

from lldb_trace import api
from lldb_trace.bundle.loader import load_bundle
from lldb_trace.decode.cursor import TraceCursor
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.values.core_match import cut_off
from lldb_trace.values.machine_state import GENERAL
from lldb_trace.x86.instructions import Transfer


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """basic.c recorded with every known state: the cores, its system calls' results, its registers."""
    folder = tmp_path_factory.mktemp("trace_ends")
    subprocess.run(["gcc", "-O0", "-g", "-o", str(folder / "basic"), str(SOURCES / "basic.c")], check=True)
    record(folder / "basic", folder / "rec")
    return folder / "rec"


def test_a_truncated_traces_end_takes_no_recorded_state_of_later(recorded, tmp_path):
    """The recorder's states match positions by instruction count: cut the trace short and the state after its
    last instruction is one of later, when the thread stood elsewhere.  It was shown at the end of history as
    known (rsp 0x7fffffffe4d8 where the stop's was 0x7fffffffe610); now only the stop's pc is known there."""
    cut = tmp_path / "cut"
    shutil.copytree(recorded, cut)
    document = json.loads((cut / "trace.json").read_text())
    process = document["processes"][0]
    del process["coreFile"]
    (cut / "trace.json").write_text(json.dumps(document))
    stream = cut / process["threads"][0]["iptTrace"]
    stream.write_bytes(stream.read_bytes()[: stream.stat().st_size * 6 // 10])
    (thread,) = api.open_bundle(cut / "trace.json").threads
    end = thread.registers_at(thread.item_count)
    assert {name for name, value in end.items() if value is not None} <= {"rip"}
    assert thread.registers_at(100) == api.open_bundle(recorded / "trace.json").threads[0].registers_at(100)


def test_a_trace_cut_between_packets_takes_its_end_core_as_after_a_gap(recorded, tmp_path):
    """A trace file cut short at a packet boundary ends with no event that stopped tracing: the thread ran on. One
    cut right after a ret took the end core as the state the ret went to, any pc being a ret's target, and its
    values were carried back over the lost instructions: wrong at every position.  Now nothing carries from the
    trace's last instruction to the core, as after a gap."""
    cut = tmp_path / "cut"
    shutil.copytree(recorded, cut)
    document = json.loads((cut / "trace.json").read_text())
    process = document["processes"][0]
    del process["startCoreFile"]
    for thread in process["threads"]:
        del thread["registerStates"], thread["syscallResults"]
    (cut / "trace.json").write_text(json.dumps(document))
    stream = cut / process["threads"][0]["iptTrace"]
    whole = stream.read_bytes()
    for length in range(len(whole) - 1, len(whole) - 400, -1):  # the first cut right after a ret, or a jmp *
        stream.write_bytes(whole[:length])
        bundle = load_bundle(cut / "trace.json")
        ended = ProcessTrace(bundle, bundle.processes[0])
        (tid,) = ended.tids
        last = ended.end_of(tid, 1)
        item = TraceCursor(last.decoded, ended.expander).item()
        if (
            item.gap is None
            and cut_off(last.decoded)
            and ended.expander.classifier[item.address].transfer == Transfer.INDIRECT
        ):
            break
    else:
        pytest.fail("no cut of the last 400 bytes ends right after an indirect branch")
    (thread,) = api.open_bundle(cut / "trace.json").threads
    (truth,) = api.open_bundle(recorded / "trace.json").threads  # the recorder's registers at every position
    wrong = []
    for position in range(thread.item_count):
        shown, seen = thread.registers_at(position), truth.registers_at(position)
        wrong += [(position, name) for name in GENERAL if shown[name] is not None and shown[name] != seen[name]]
    assert wrong == []


def test_where_an_exited_thread_stopped_its_pc_is_not_guessed(recorded, tmp_path):
    """Without an end core nothing gives the pc after the exit_group the thread ran last (the kernel's return
    address): registers_at gives none there, not the syscall's own address (LLDB's frame shows the syscall's
    line there), and the syscall's address at the position before it."""
    document = json.loads((recorded / "trace.json").read_text())
    del document["processes"][0]["coreFile"]
    (recorded / "no_end_core.json").write_text(json.dumps(document))
    try:
        (thread,) = api.open_bundle(recorded / "no_end_core.json").threads
        last = thread.registers_at(thread.item_count - 1)["rip"]  # the recorder's state there
        assert thread.read_memory_at(None, last, 2)[0] == b"\x0f\x05"
        assert thread.registers_at(thread.item_count)["rip"] is None
    finally:
        (recorded / "no_end_core.json").unlink()
