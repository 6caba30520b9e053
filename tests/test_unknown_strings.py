"""A string over memory not known at a position is shown as not known, never as a shorter or empty string.

LLDB shows a char array or char pointer by the string it could read: over
bytes a trace does not determine, ``tag = ""`` and ``note = 0x... ""``, as
if the program had stored an empty string there.  test_traces/src/string_fields.c
fills a heap record's ``tag`` and the buffer ``note`` points to; recorded with
register states and the end core (no start core, no system calls' results),
their bytes are not known before fill() writes them, and known after.
"""

import json
import re

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.recordings import record_program


def unknown(address):
    return f"<not known at this position (memory at {address:#x})>"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    trace = record_program(tmp_path_factory.mktemp("string_fields"), "string_fields.c")
    recorded = json.loads(trace.read_text())
    (process,) = recorded["processes"]
    del process["startCoreFile"]
    for thread in process["threads"]:
        del thread["syscallResults"]
    trace.with_name("end_and_registers.json").write_text(json.dumps(recorded))
    for thread in process["threads"]:
        del thread["registerStates"]
    trace.with_name("end_core.json").write_text(json.dumps(recorded))
    return trace.with_name("end_and_registers.json")


def commands(bundle):
    return [
        f"trace load {bundle}",
        "breakpoint set -p 'strcpy.r->note'",  # r->note is set, its buffer not written yet
        "pt reverse-continue",  # in fill(&both->second, ...)
        "pt reverse-continue",  # in fill(r, ...)
        "frame variable *r",
        "frame variable -P 1 r",
        "p r->note",
        "frame variable r->tag",
        "pt goto end",
        "frame variable -P 1 r",
        "frame variable *wild",
        "p wild->id",
        "memory read -c 8 0x7fffffffeffc",  # the stack's last 4 bytes, and past its mapping
    ]


def check(out):
    """``out``: the commands' output; the record and the note's buffer are where the end shows them."""
    record = int(re.search(r"^\(record \*\) r = (0x[0-9a-f]+) \{$", out, re.M).group(1), 16)
    note = int(re.search(r'^  note = (0x[0-9a-f]+) "hello, world"$', out, re.M).group(1), 16)  # at the end
    tag = record + 8
    assert f"(record) *r = (id = 7, tag = {unknown(tag)}, note = {unknown(note)})" in out
    assert f"  tag = {unknown(tag)}\n  note = 0x{note:016x} {unknown(note)}\n" in out  # -P 1: the pointer is known
    assert f"(char *) 0x{note:016x} {unknown(note)}" in out  # p's result
    assert f"(char[8]) r->tag = {unknown(tag)}" in out
    assert '""' not in out
    assert f'  tag = "node1"\n  note = 0x{note:016x} "hello, world"\n' in out  # known at the end: shown
    wild = 0x480000000040  # at the crash its target is not mapped: no value to know
    tag = f"<not mapped (memory at {wild + 8:#x})>"
    assert f"(record) *wild = (id = <not mapped>, tag = {tag}, note = <not mapped>)" in out


def check_errors(err):
    assert "memory at 0x7ffffffff000 is not mapped: the process mapped nothing there when its core was taken" in err


def test_in_lldb(bundle, tmp_path):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        results = [session.handle(command) for command in commands(bundle)]
        out, err = session.streams()
    finally:
        session.close()
    check(out + "".join(result.GetOutput() for result in results))
    check_errors(err + "".join(result.GetError() for result in results))


@needs_lldb_22
def test_in_lldb_22(bundle, tmp_path):
    result = run_lldb_22(tmp_path, commands(bundle))
    check(result.stdout)
    check_errors(result.stderr)


def test_the_ide_shows_them_as_not_known(bundle, tmp_path):
    """The DAP server's variables and watch views show a value by dap.inspection.value_text."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    from lldb_trace.dap.inspection import value_text

    session = Session(tmp_path)
    try:
        for command in commands(bundle)[:4]:
            session.handle(command)
        frame = session.target.GetProcess().GetSelectedThread().GetSelectedFrame()
        shown = [value_text(frame.GetValueForVariablePath(path)) for path in ("r", "r->tag", "r->note", "text")]
        session.handle("pt goto end")
        frame = session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0)
        wild = [value_text(frame.GetValueForVariablePath(path)) for path in ("wild->id", "wild->tag")]
    finally:
        session.close()
    record = int(shown.pop(0).split()[0], 16)
    note = int(shown[1].split()[0], 16)
    assert shown == [unknown(record + 8), f"0x{note:016x} {unknown(note)}", '0x000000000040200a "hello, world"']
    assert wild == ["<not mapped (memory at 0x480000000040)>", "<not mapped (memory at 0x480000000048)>"]


def test_a_struct_behind_a_pointer_whose_frame_base_is_not_known_reads_as_unknown(bundle, tmp_path):
    """From the end core alone, fill()'s frame base is not known after strcpy (libc's writes): LLDB said "<parent
    failed to evaluate: No frame base available for this historical stack frame.>" for ``*r``."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        for command in (
            f"trace load {bundle.with_name('end_core.json')}",
            "breakpoint set -p 'memcpy.r->tag'",
            "pt reverse-continue",
        ):
            session.ok(command)
        session.ok("frame variable *r r->tag")
        shown, _ = session.streams()  # the plugin's override writes to the debugger's output
    finally:
        session.close()
    assert "(record) *r = <not known at this position>\n(char[8]) r->tag = <not known at this position>\n" in shown


def test_two_strings_alike_each_keep_their_own_answer(bundle, tmp_path):
    """``both->first.tag`` is "" and known, ``both->second.tag`` shows "" too but is not known: the mark went to the
    first one found (the known one) and left the unknown one as a known empty string."""
    lldb_session = pytest.importorskip("support.lldb_session", reason="LLDB's Python bindings")
    out, _ = lldb_session.commands_output(
        tmp_path,
        [
            f"trace load {bundle}",
            "breakpoint set -p 'fill.&both->second'",
            "pt reverse-continue",
            "frame variable *both",
        ],
    )
    first, second = out[out.index("first = ") :].split("second = ", 1)
    assert 'tag = ""' in first and "not known" not in first.split("note = ")[0]
    assert re.search(r"tag = <not known at this position \(memory at 0x[0-9a-f]+\)>", second.split("note = ")[0])
