"""``pt finish`` and ``pt reverse-finish`` from inside an inlined function leave the inlined call, as GDB's do.

At -O2 a function inlined into main is frame #0 in LLDB's backtrace, but it is
no call in the trace: ``finish`` there said '"finish" not meaningful in the
outermost frame.' (and the IDE's step-out with it).  GDB runs to the first
instruction past the inlined code, and back to the latest execution of its
entry, in the frame that holds it, passing over the real calls the inlined code
makes (test_traces/src/inlined_calls.c: scaled_sum, inlined into main, calls
triple); at the entry GDB stands in the caller, so a finish from there leaves
the next call out.
"""

import re

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.recordings import record_program

COMMANDS = [
    "breakpoint set -n triple",
    "pt reverse-continue",  # triple's last call, made from the inlined loop
    "breakpoint delete -f",
    "pt finish",  # back in the inlined loop (a real return)
    "pt finish",  # out of the inlined code: main's own next instruction
    "pt reverse-stepi",  # the last instruction of the inlined code
    "pt reverse-finish",  # the inlined code's entry, where GDB stands in main (LLDB shows the inlined frame)
    "pt stepi",
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return record_program(tmp_path_factory.mktemp("inlined_calls"), "inlined_calls.c", flags=("-O2", "-g", "-no-pie"))


def check(stops):
    """``stops``: (position, function of frame #0) after each movement of COMMANDS."""
    (called, _), (in_loop, inlined), (out, after), (last, still), (entry, at_entry), (first, _) = stops
    assert inlined == still == at_entry == "scaled_sum" and after == "main"
    assert in_loop > called and out > in_loop and last == out - 1
    assert 0 < entry < called and first == entry + 1


def stops_in(output):
    """(position, function) of each stop ``output`` reports, in order."""
    found = re.findall(r"frame #0: 0x[0-9a-f]+ inlined_calls`(\w+).*?\nPosition: instruction (\d+) of", output, re.S)
    return [(int(position), function) for function, position in found]


def test_in_lldb(session, bundle):
    session.ok(f"trace load {bundle}")
    output = "".join(session.ok(command) for command in COMMANDS)
    assert "not meaningful" not in output
    check(stops_in(output))


@needs_lldb_22
def test_in_lldb_22(bundle, tmp_path):
    result = run_lldb_22(tmp_path, [f"trace load {bundle}", *COMMANDS])
    assert "not meaningful" not in result.stdout + result.stderr
    check(stops_in(result.stdout))
