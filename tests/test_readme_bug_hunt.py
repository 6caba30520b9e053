"""The README's bug hunt is a real session: every line it shows is what the commands print.

The walkthrough ("Find a bug by going back in time") shows excerpts of LLDB's output after each
command; run the commands on the committed recording and check each excerpt line is printed.
"""

import re

import pytest
from conftest import ROOT

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb_session import Session  # noqa: E402

SECTION = re.compile(r"### Find a bug by going back in time\n(.*?)\n### ", re.S)
BLOCK = re.compile(r"```\n(.*?)```", re.S)


def walkthrough():
    """``[(command, [lines it must print])]`` from the README's walkthrough, in order."""
    steps = []
    for block in BLOCK.findall(SECTION.search((ROOT / "README.md").read_text()).group(1)):
        for line in block.splitlines():
            if line.startswith("(lldb) "):
                steps.append((line[len("(lldb) ") :], []))
            elif line.strip():
                steps[-1][1].append(line.strip())
    return steps


def test_the_readme_bug_hunt_prints_what_the_readme_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    session = Session(tmp_path)
    try:
        steps = walkthrough()
        assert len(steps) >= 10
        printed = 0
        for command, lines in steps:
            if command == "command script import lldb_trace":
                continue  # the session imported it
            result = session.handle(command)
            assert result.Succeeded(), f"{command}: {result.GetError()}"
            out = session.streams()[0]
            shown = (result.GetOutput() + out[printed:]).splitlines()
            printed = len(out)
            for line in lines:
                assert any(line in " ".join(s.split()) or line == s.strip() for s in shown), (command, line)
    finally:
        session.close()
