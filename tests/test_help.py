"""The help a newcomer lands on: complete for the routed built-ins, and clean at 80 columns in both LLDBs."""

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb_batch import LOAD_PLUGIN  # noqa: E402
from support.lldb_session import Session  # noqa: E402

from lldb_trace.commands import COMMANDS  # noqa: E402

WIDTH = 80  # LLDB's width without a terminal, and the narrowest one the help is written for
PT_HELP = ["help pt", *(f"help pt {command.name}" for command in COMMANDS)]
ROUTED_HELP = ["help trace dump", "help trace load", "help thread trace dump instructions", "help trace"]


def shown(session, command):
    """What ``command`` printed: in its result (pt help) or on the debugger's output (routed help)."""
    before = session.streams()[0]
    result = session.handle(command)
    assert result.Succeeded(), result.GetError()
    return result.GetOutput() + session.streams()[0][len(before) :]


def prose_lines(text):
    """The lines LLDB wrapped (all but the option usage synopsis, which LLDB never wraps, nor its own commands')."""
    lines = text.splitlines()
    return [line for k, line in enumerate(lines) if not (k and lines[k - 1] == "Command Options Usage:")]


def ragged(text):
    """Lines ended early although the next line's first word would have fit: help hard-wrapped by hand.

    LLDB fills a line up to one column short of the width.  A line starting with an option (or LLDB's
    "Values:") begins an item of its own.
    """
    lines = prose_lines(text)
    found = []
    for line, following in itertools.pairwise(lines):
        indent = len(following) - len(following.lstrip())
        if line.strip() and following.strip() and indent == len(line) - len(line.lstrip()):
            next_word = following.split()[0]
            new_item = next_word.startswith(("-", "Values:")) or " -- " in following  # an option, a command
            if len(line) + 1 + len(next_word) < WIDTH and not new_item:
                found.append(line)
    return found


@pytest.mark.parametrize("command", PT_HELP + ROUTED_HELP)
def test_help_is_readable_at_80_columns(session, command):
    text = shown(session, command)
    assert [line for line in prose_lines(text) if len(line) > WIDTH] == []
    assert ragged(text) == []
    assert "<none>" not in text  # every argument and option value has a real type


def test_help_of_routed_commands_shows_what_runs(session):
    text = shown(session, "help trace dump")
    assert text.startswith("'trace dump' runs 'pt dump'")
    assert "Syntax: trace dump <cmd-options>" in text
    assert "-i ( --instructions )" in text and "-C ( --function-calls )" in text
    assert "--instructions (-i): the last COUNT items" in text
    assert shown(session, "help tr du") == text  # abbreviations resolve as LLDB resolves them
    load = shown(session, "help trace load")
    assert "Syntax: trace load <cmd-options> <filename>" in load and "-v ( --verbose )" in load
    thread = shown(session, "help thread trace dump instructions")
    assert thread.startswith("'thread trace dump instructions' runs 'pt dump --instructions'")
    assert "-s/--skip is its --offset" in thread
    assert "Syntax: thread trace dump instructions <cmd-options> [<thread-index>]" in thread  # LLDB's own options
    assert "'help trace dump' says how" in shown(session, "help trace")
    assert "Debugger commands:" in shown(session, "help")  # everything else is LLDB's own help


@pytest.mark.parametrize("command", [command.name for command in COMMANDS])
def test_help_option_shows_the_help(session, command):
    assert session.ok(f"pt {command} --help") == session.ok(f"help pt {command}")
    assert session.ok(f"pt {command} -h") == session.ok(f"help pt {command}")


def test_help_option_of_routed_commands(session):
    assert shown(session, "trace dump --help") == shown(session, "help trace dump")
    assert shown(session, "thread trace dump instructions -h") == shown(session, "help thread trace dump instructions")


def test_help_without_routing_is_lldbs_own(tmp_path, monkeypatch):
    monkeypatch.setenv("LLDB_TRACE_NO_ROUTING", "1")
    session = Session(tmp_path)
    try:
        assert "Dump the loaded processor trace data." in shown(session, "help trace dump")
        assert "--instructions (-i)" in shown(session, "pt dump --help")
    finally:
        session.close()


@pytest.mark.parametrize("binary", [str(Path(sys.executable).parent / "lldb"), shutil.which("lldb-22") or "lldb-22"])
def test_help_in_a_real_lldb(binary):
    """The pip LLDB and Debian's lldb-22 (with its own intel-pt plug-in) print the same routed help."""
    if not Path(binary).exists() and shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed")
    commands = [
        *LOAD_PLUGIN,
        "help trace dump",
        "pt dump --help",
        "help thread trace dump instructions",
    ]
    result = subprocess.run(
        [binary, "--no-lldbinit", "--batch", *(arg for command in commands for arg in ("-o", command))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outputs = dict(chunk.split("\n", 1) for chunk in result.stdout.split("(lldb) ")[1:])
    routed = outputs["help trace dump"]
    assert routed.startswith("'trace dump' runs 'pt dump'") and "--function-calls (-C): the call tree" in routed
    assert ragged(routed) == [] and "Syntax: trace dump <cmd-options>" in routed
    assert outputs["pt dump --help"].startswith("Show the selected target's trace")
    thread = outputs["help thread trace dump instructions"]
    assert "(-s/--skip is its --offset" in thread and "-k ( --kind )" in thread
