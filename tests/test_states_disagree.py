"""A core of another moment at the same pc (test_traces/src/loop_marker.c recorded to marker's first call, its
core's loop counter and marker's argument made what a later pass has) passes every check a core can be given,
and the trace contradicts it: the counter is stored as 0 and read back with nothing between.  The recovery met
that as a conflict and held the values that disagreed unknown, but kept what else the core taught: on a real
core of a later pass (a tester's gc.c, its pid made the trace's) 29 register values were shown wrong beside
one conflict.  A conflict now withdraws the thread's values, with one line saying why."""

import json
import struct
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile
from support.paths import SOURCES

from lldb_trace import api
from lldb_trace.values.recovery import StatesDisagreeError


def _set_rdi_in_core(core, value):
    """The first thread's rdi in the core's NT_PRSTATUS note (pr_reg, struct user_regs_struct: rdi is its 15th)."""
    with open(core, "r+b") as file:
        elf = ELFFile(file)
        (notes,) = [segment for segment in elf.iter_segments() if segment["p_type"] == "PT_NOTE"]
        at, end = notes["p_offset"], notes["p_offset"] + notes["p_filesz"]
        while at < end:
            file.seek(at)
            name_size, desc_size, kind = struct.unpack("<III", file.read(12))
            desc = at + 12 + (name_size + 3) // 4 * 4
            if kind == 1:  # NT_PRSTATUS
                file.seek(desc + 112 + 14 * 8)
                file.write(value.to_bytes(8, "little"))
                return
            at = desc + (desc_size + 3) // 4 * 4
        raise AssertionError("no NT_PRSTATUS")


def _write_in_core(core, address, data):
    with open(core, "r+b") as file:
        for segment in ELFFile(file).iter_segments():
            low, size = segment["p_vaddr"], segment["p_filesz"]
            if segment["p_type"] == "PT_LOAD" and low <= address < low + size:
                offset = segment["p_offset"] + address - segment["p_vaddr"]
                break
        else:
            raise AssertionError(f"{address:#x} is in no segment of the core")
        file.seek(offset)
        file.write(data)


@pytest.fixture(scope="module")
def later_core(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loop_marker")
    binary = folder / "loop_marker"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), str(SOURCES / "loop_marker.c")], check=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--until", "marker", "-o", str(folder / "rec"), "--"]
    subprocess.run([*command, str(binary)], check=True, capture_output=True, timeout=300)
    document = json.loads((folder / "rec" / "trace.json").read_text())
    for process in document["processes"]:  # the end core alone, as a crash's perf.data and core give it
        process.pop("startCoreFile", None)
        for thread in process["threads"]:
            thread.pop("syscallResults", None), thread.pop("registerStates", None)
    (folder / "rec" / "end_only.json").write_text(json.dumps(document))
    (truth,) = api.open_bundle(folder / "rec" / "trace.json").threads
    counter = truth.registers_at(truth.item_count)["rbp"] - 4  # main's `i`, at -0x4(%rbp) (marker's first insn)
    assert truth.read_memory_at(truth.item_count, counter, 4) == (bytes(4), b"\xff" * 4)
    _write_in_core(folder / "rec" / "cores" / "end.core", counter, (2).to_bytes(4, "little"))
    _set_rdi_in_core(folder / "rec" / "cores" / "end.core", 9)  # marker(i + 7), as on its third call
    return folder / "rec"


def test_a_core_the_trace_contradicts_shows_no_value_and_says_why(later_core):
    (thread,) = api.open_bundle(later_core / "end_only.json").threads
    with pytest.raises(StatesDisagreeError, match=r"^the known states and the trace disagree \(\d+ value\(s\)"):
        thread.registers_at(thread.item_count - 3)
    with pytest.raises(StatesDisagreeError):
        thread.read_memory_at(0, 0x1000, 8)
