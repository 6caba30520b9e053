"""What a loaded trace cannot know reads as unknown, never as a value: memory it does not hold, at any position.

A trace records which instructions ran.  The modules' code and read-only data
are the same at every position; their writable sections (``.data``, ``.bss``,
the GOT) hold in the file only what the program started with, and the stack
and heap are in no file.  test_traces/crash's ``pointer`` is in ``.bss`` at
0x404020 (it was NULL when it crashed, but a trace cannot tell); its string
"about to crash" is in ``.rodata`` at 0x402004.
"""

import json
import shutil

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.paths import HISTORY, TRACES

from lldb_trace import api

LLDB_BINDINGS = "LLDB's Python bindings: pip install 'lldb-trace[test]'"

CRASH = TRACES / "crash" / "trace.json"
POINTER, STRING, HEAP = 0x404020, 0x402004, 0x4052A0
COMMANDS = [
    f"trace load {CRASH}",
    "pt goto 2700",
    "p pointer",
    "p &pointer",
    "x/2gx &pointer",
    f"x/2gx {POINTER:#x}",
    f"x/s {STRING:#x}",
    "x/4xb main",
    f"x/4gx {HEAP:#x}",
]  # fmt: skip: the last fails as a command (lldb --batch stops there)
UNKNOWN_POINTER = f"memory at {POINTER:#x}, in crash`pointer (.bss) is not known at this position"
UNKNOWN_HEAP = f"memory at {HEAP:#x} is not known at this position: a trace records which instructions ran"


def test_only_read_only_segments_are_served():
    module_bytes = api.open_bundle(CRASH).threads[0].process_trace.module_bytes
    assert module_bytes.read(POINTER, 8) == bytes(8)  # the decoder's view: the file's bytes, .bss as zeros
    assert module_bytes.read_unchanging(POINTER, 8) == b""  # what a debugger may show at a position: nothing
    assert module_bytes.read_unchanging(STRING, 14) == b"about to crash"
    assert module_bytes.first_writable(POINTER - 64, POINTER + 8) == POINTER - 64  # the writable segment holds all that
    assert module_bytes.first_writable(STRING, STRING + 14) is None


def check(output, errors):
    assert "pointer is not known at this position" in errors and "(.bss)" in errors
    assert "(int *volatile *) 0x0000000000404020" in output  # its address is known; LLDB reads the value to take it
    assert errors.count(UNKNOWN_POINTER) == 2
    assert UNKNOWN_HEAP in errors
    assert '0x00402004: "about to crash"' in output
    assert "0x00401154: 0x55 0x48 0x89 0xe5" in output  # main's code: push %rbp; mov %rsp, %rbp
    assert "0x404020: 0x" not in output  # never the file's zeros as if they were the value


def in_pip_lldb(tmp_path, commands):
    """``(out, err)`` of ``commands`` in the in-process LLDB: the debugger's streams and the commands' results."""
    return pytest.importorskip("support.lldb_session", reason=LLDB_BINDINGS).commands_output(tmp_path, commands)


def test_in_lldb(tmp_path):
    check(*in_pip_lldb(tmp_path, COMMANDS))


@needs_lldb_22
def test_in_lldb_22(tmp_path):
    result = run_lldb_22(tmp_path, COMMANDS)
    check(result.stdout, result.stderr)


GRADEBOOK = HISTORY / "gradebook" / "trace.json"


def without_cores(tmp_path):
    """The gradebook's bundle without its core files: nothing is known of the data there."""
    folder = tmp_path / "gradebook"
    shutil.copytree(GRADEBOOK.parent, folder, ignore=shutil.ignore_patterns("cores"))
    bundle = json.loads((folder / "trace.json").read_text())
    for process in bundle["processes"]:
        process.pop("coreFile", None)
        process.pop("startCoreFile", None)
    (folder / "trace.json").write_text(json.dumps(bundle))
    return folder / "trace.json"


def test_a_structs_fields_read_as_unknown_not_as_failed_reads(tmp_path):
    """Without a core, gradebook's ``static struct course algebra`` in .data is not known: its fields say so."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    bundle = without_cores(tmp_path)
    try:
        for command in (f"trace load {bundle}", "frame select 2", "p algebra", "p algebra.credits", "p 1+1"):
            session.handle(command)
        out, err = session.streams()
        two = session.handle("p 1+1").GetOutput()  # nothing to say: LLDB's own result holds the output
    finally:
        session.close()
    assert "(course)  (title = <not known at this position>, credits = <not known at this position>)" in out
    assert "error: algebra.credits is not known at this position" in err and "read memory" not in out + err
    assert two.strip() == "(int) 2"


def end_core_only(tmp_path):
    """The gradebook's bundle with its end core alone: near the start some stack words are known, some not."""
    folder = tmp_path / "end-core-only"
    shutil.copytree(GRADEBOOK.parent, folder)
    bundle = json.loads((folder / "trace.json").read_text())
    for process in bundle["processes"]:
        process.pop("startCoreFile", None)
    (folder / "trace.json").write_text(json.dumps(bundle))
    return folder / "trace.json"


PARTIAL = ["pt goto 2", "x/4gx 0x7fffffffeb10", "x/1gx 0x7fffffffeb20"]


def check_partial(out, err):
    """A read whose first bytes are known and the next not is refused, naming the first unknown byte: LLDB showed
    the rest as zeros (0x7fffffffeb20 among them, whose value is known), with only a warning."""
    assert "memory at 0x7fffffffeb18 is not known at this position" in err
    assert "the 8 bytes before it, from 0x7fffffffeb10, are known: ask for 8 bytes or fewer" in err
    assert "0x7fffffffeb10: " not in out and "not all bytes" not in (out + err).lower()
    assert "0x7fffffffeb20: 0x00000000004ad4e0" in out


BOTH_LLDBS = pytest.mark.parametrize("lldb_build", ["pip", pytest.param("lldb-22", marks=needs_lldb_22)])


def in_lldb(lldb_build, tmp_path, commands):
    """``(out, err)`` of ``commands`` in the pip LLDB (in process) or Debian's lldb-22."""
    if lldb_build == "pip":
        return in_pip_lldb(tmp_path, commands)
    result = run_lldb_22(tmp_path, commands)
    return result.stdout, result.stderr


@BOTH_LLDBS
def test_a_read_partly_known_names_the_first_unknown_byte(lldb_build, tmp_path):
    check_partial(*in_lldb(lldb_build, tmp_path, [f"trace load {end_core_only(tmp_path)}", *PARTIAL]))


@BOTH_LLDBS
def test_a_structs_unknown_fields_are_one_line_each(lldb_build, tmp_path):
    """At gradebook's start, from its end core alone, ``ada``'s fields are not known: each is one line (lldb-22
    adds an empty line after each failed read it shows, except inside an array's parentheses)."""
    out, _ = in_lldb(lldb_build, tmp_path, [f"trace load {end_core_only(tmp_path)}", "pt goto 2", "frame variable ada"])
    shown = out[out.index("(student) ada = {") :].split("}\n")[0]
    assert shown.splitlines()[1:] == [
        "  name = <not known at this position>",
        "  marks = ([0] = <not known at this position>, [1] = <not known at this position>, [2] = <not known at"
        " this position>, [3] = <not known at this position>)",
        "  course = <not known at this position>",
        "  count = <not known at this position>",
    ]


UNLOCATED = ["pt goto 100", "frame variable", "p mark", "p 1+1"]


def check_unlocated(out, err):
    """Without a known state no frame base is known: LLDB's "<No frame base available for this historical stack
    frame.>" (and lldb-22's empty line after it) read as the value not being known."""
    assert "(student *) student = <not known at this position>\n(int) mark = <not known at this position>\n" in out
    assert "error: mark is not known at this position" in err and "(int) 2" in out
    assert "frame base" not in out + err and "materialize" not in err


@BOTH_LLDBS
def test_a_variable_without_a_frame_base_reads_as_unknown(lldb_build, tmp_path):
    check_unlocated(*in_lldb(lldb_build, tmp_path, [f"trace load {without_cores(tmp_path)}", *UNLOCATED]))


NULL_FIELD = [f"trace load {HISTORY / 'gradebook' / 'trace.json'}", "p student->course->credits", "pt goto -2",
              "p student->course->credits", "x/2x 0x8"]  # fmt: skip


def check_null_field(out, err):
    """gradebook's crash reads credits through the overwritten course pointer 0x6: at address 0xe, which no
    process maps, at the end as at a past position (it said "not known at this position" there)."""
    cannot = "error: student->course->credits cannot be read: it needs memory at 0xe, and no process maps memory"
    assert err.count(f"{cannot} below 0x10000 (a null pointer, or a field through one?)") == 2
    assert "error: memory at 0x8 is not mapped: no process maps memory below 0x10000" in err
    assert "not known" not in err


@BOTH_LLDBS
def test_memory_below_the_lowest_mapping_is_not_mapped_not_unknown(lldb_build, tmp_path):
    check_null_field(*in_lldb(lldb_build, tmp_path, NULL_FIELD))


def test_a_location_read_through_unknown_memory_reads_as_unknown():
    """A VLA's location (its pointer, saved in the frame) read through memory not known: LLDB puts the plugin's
    whole error, line break included, inside the value (pip LLDB: DW_OP_deref; lldb-22: DW_OP_deref_size)."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from lldb_trace.commands import unknown_values
    from lldb_trace.debugger.scripted_process import UNKNOWN_MEMORY

    for operation in ("DW_OP_deref", "DW_OP_deref_size"):
        shown = (
            f"(char[5]) vla = <failed to dereference pointer from 0x7fffffffe5a0 for {operation}: memory there "
            f"{UNKNOWN_MEMORY}\n>\n"
        )
        assert unknown_values._UNREAD_VALUE.sub(unknown_values.UNKNOWN_VALUE, shown) == (
            "(char[5]) vla = <not known at this position>\n"
        )
    error = f"couldn't get the value of variable vla: failed to dereference pointer from 0x7fffffffe5a0 for {operation}"
    found = unknown_values._FAILED_READ.search(error)
    assert int(found.group(1) or found.group(2), 16) == 0x7FFFFFFFE5A0  # the address p names as the one it needs


def test_the_last_line_of_a_memory_read_reaches_as_far_as_its_items():
    """A read of a known word beside an unknown one (``x/gx &g``, with ``g`` known and the next word not) was refused:
    its one line was taken to reach 64 bytes.  Where the items say how many bytes they are, it reaches that far."""
    from lldb_trace.commands.unknown_values import _last_line_bytes

    assert _last_line_bytes("0x555555558010: 0x0000000000000064") == 8
    assert _last_line_bytes("0x7fffffffeb70: 0xffffebb0 0x00007fff 0x0040175b") == 12
    assert _last_line_bytes("0x7fffffffeb80: 10 90 47 00                                      ..G.") == 4
    assert _last_line_bytes("0x7fffffffeb70: b0 eb ff ff ff 7f 00 00 5b 17 40 00 00 00 00 00  ........[.@.....") == 16
    for unsure in ("0x7fffffffeb70: -5200", '0x00402004: "about to crash"', "0x00401154: 0x55 0x48 abc"):
        assert _last_line_bytes(unsure) == 64  # decimal, strings, anything else: as far as a line may reach
