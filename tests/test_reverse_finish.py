"""reverse-finish, then reverse-step: GDB 14 and later reach the line before the calling line at once.

GDB 13 and GDB 18 both stop a reverse-finish at the call instruction, mid-line;
the reverse-step or reverse-next right after it goes, in GDB 13, to the start of
the calling line and, in GDB >= 14 (GDB bug 29927), on to the line before.  The
committed answers (test_traces/history/lines/gdb.json, sequence "into weigh and
out") hold both; the project follows the newer GDB.  From the same position
reached any other way, reverse-step goes to the start of the calling line.
"""

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.lldb_output import positions
from support.paths import HISTORY

from lldb_trace import api

LINES = HISTORY / "lines"
# In weigh() at 77 (lines.c:13), called from total() at lines.c:19; the line before that is lines.c:18.
COMMANDS = ["pt goto 77", "pt reverse-finish", "pt reverse-step", "pt goto 67", "pt reverse-step"]


def test_the_calling_line_counts_as_stepped_back_over_after_reverse_finish():
    history = api.open_bundle(LINES).threads[0].history
    history.goto(77)
    assert history.finish(reverse=True).position == 67
    assert history.line_at(67)[1] == 19
    assert history.step(reverse=True).position == 53 and history.line_at(53)[1] == 18  # GDB 18's answer
    history.goto(67)
    assert history.step(reverse=True).position == 57 and history.line_at(57)[1] == 19  # start of the line
    history.goto(77)
    history.finish(reverse=True)
    assert history.next(reverse=True).position == 53  # reverse-next too
    history.goto(77)
    history.finish(reverse=True)
    history.stepi()
    history.stepi(reverse=True)  # back at the call, but by another way: the line is not stepped over
    assert history.step(reverse=True).position == 57


def test_in_lldb(tmp_path):
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    session = Session(tmp_path)
    try:
        session.ok(f"trace load {LINES / 'trace.json'}")
        output = "".join(session.ok(command) for command in COMMANDS)
    finally:
        session.close()
    assert positions(output) == [77, 67, 53, 67, 57]


@needs_lldb_22
def test_in_lldb_22(tmp_path):
    result = run_lldb_22(tmp_path, [f"trace load {LINES / 'trace.json'}", *COMMANDS])
    assert result.returncode == 0, result.stderr
    assert positions(result.stdout) == [77, 67, 53, 67, 57]
