"""The README's LLDB sessions are real: every command runs, and every line shown is what it prints.

The walkthrough ("Find a bug by going back in time") and the tour of "In LLDB" show
excerpts of LLDB's output after each command; run the commands on the committed
recordings and check each excerpt line is printed ("…" and "..." stand for what the
README leaves out).
"""

import re

import pytest
from conftest import ROOT

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb_session import Session  # noqa: E402

BLOCK = re.compile(r"```\n(.*?)```", re.S)


def session_steps(title, blocks):
    """``[(command, [lines it must print])]`` from the first ``blocks`` LLDB blocks of the README section
    ``title`` (None: all), in order."""
    section = re.search(rf"### {re.escape(title)}\n(.*?)\n### ", (ROOT / "README.md").read_text(), re.S)
    steps = []
    for block in BLOCK.findall(section.group(1))[:blocks]:
        for line in block.splitlines():
            if line.startswith("(lldb) "):
                steps.append((line[len("(lldb) ") :], []))
            elif line.strip() and "…" not in line and line.strip() != "...":
                steps[-1][1].append(line.strip())
    return steps


@pytest.mark.parametrize(
    ("title", "blocks", "least"), [("Find a bug by going back in time", None, 10), ("In LLDB", 1, 13)]
)  # the later blocks of "In LLDB" show traces too large to commit
def test_the_readme_sessions_print_what_the_readme_shows(tmp_path, monkeypatch, title, blocks, least):
    monkeypatch.chdir(ROOT)
    session = Session(tmp_path)
    try:
        steps = session_steps(title, blocks)
        assert len(steps) >= least
        printed = 0
        for command, lines in steps:
            if command == "command script import lldb_trace":
                continue  # the session imported it
            result = session.handle(command.replace("/tmp/crash-copy", str(tmp_path / "crash-copy")))
            assert result.Succeeded(), f"{command}: {result.GetError()}"
            out = session.streams()[0]
            shown = (result.GetOutput() + out[printed:]).splitlines()
            printed = len(out)
            for line in lines:
                wanted = " ".join(line.split())
                assert any(wanted in " ".join(s.split()) for s in shown), (command, line)
    finally:
        session.close()
