"""``lldb-trace dump`` prints what ``pt dump`` prints in LLDB for the same bundle, without a debugger.

Both run the same views; the command line symbolizes from the module files
(ELF symbols, PLT stubs, DWARF lines) where LLDB answers itself, and the two
agree on every address these bundles executed (test_api checks that), so the
text and the JSON must be the same, character for character.
"""

import argparse
import re
import shlex
import subprocess
import sys

import pytest
from support.paths import TRACES

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.committed_bundles import loadable  # noqa: E402

import lldb_trace.api as api  # noqa: E402
from lldb_trace import cli  # noqa: E402

BUNDLES = sorted(folder.name for folder in TRACES.iterdir() if (folder / "trace.json").is_file())
INSTRUCTION_DUMPS = [
    "-i",
    "-i -c 40 -o 7",
    "-i --all --forwards --kind",
    "-i -c 25 --id 12 --events --time",
    "-i -c 25 --forwards --raw --kind --json",
    "-i --all --events --time --json",
    "-E --all --time",
    "-E -c 4 --forwards -o 1 --json --time",
    "-i -c 2 --id 0",  # zeros are values given, not options left out
    "-i -c 0",
]
CALL_DUMPS = [
    "-C",
    "-C --all",
    "-C --all --json",
    "-C -c 6 --id 12 --forwards --flat",
    "-C --all --newest-first --module 'libc.so*'",
    "-C --all --function 'str*' --json",
]
DECODE_TIME = re.compile(r"decoded in [0-9.]+ ms|\"decodeSeconds\": [0-9.e-]+")


@pytest.fixture(scope="module")
def opened():
    return {}


@pytest.fixture
def opened_once(monkeypatch, opened):
    """Each bundle opened once for all the command lines of this module: reading libc's symbols takes seconds."""
    open_bundle = api.open_bundle

    def open_once(path, disassembly_flavor="att", binaries=None, workers=None):
        key = (str(path), disassembly_flavor)
        if key not in opened:
            opened[key] = open_bundle(path, disassembly_flavor, binaries, workers=workers)
        return opened[key]

    monkeypatch.setattr(api, "open_bundle", open_once)


def loaded(session, name):
    """The bundle folder, loaded in LLDB, and ``-t`` options naming every thread of its first process."""
    folder = TRACES / name
    loadable(folder)
    session.ok(f"pt load {folder}")
    process = session.target.GetProcess()
    every_thread = " ".join(f"-t {process.GetThreadAtIndex(k).GetThreadID()}" for k in range(process.GetNumThreads()))
    return folder, every_thread


def command_line(capsys, folder, options):
    assert cli.main(["dump", str(folder), *shlex.split(options)]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def assert_same_dumps(session, capsys, folder, dumps):
    for options in dumps:
        assert command_line(capsys, folder, options) == session.ok(f"pt dump {options}"), options


@pytest.mark.parametrize("name", BUNDLES)
def test_instructions_and_events_are_those_of_pt_dump(session, capsys, opened_once, name):
    folder, every_thread = loaded(session, name)
    assert_same_dumps(session, capsys, folder, [*INSTRUCTION_DUMPS, f"-i -c 3 {every_thread}"])


@pytest.mark.parametrize("name", BUNDLES)
def test_call_trees_are_those_of_pt_dump(session, capsys, opened_once, name):
    folder, every_thread = loaded(session, name)
    assert_same_dumps(session, capsys, folder, [*CALL_DUMPS, f"-C -c 3 --json {every_thread}"])


@pytest.mark.parametrize("name", BUNDLES)
def test_session_info_is_that_of_pt_dump(session, capsys, name):
    """The same info as pt dump once it has decoded the threads (as lldb-trace dump does), but for the decode time."""
    folder, every_thread = loaded(session, name)
    session.ok(f"pt dump -i -c 1 {every_thread}")
    for options in ("", "--json", "-v", f"--json {every_thread}", every_thread):
        ours = DECODE_TIME.sub("", command_line(capsys, folder, options))
        assert ours == DECODE_TIME.sub("", session.ok(f"pt dump {options}")), options


def test_the_console_script_dumps_without_lldb(session):
    """The installed command runs in a Python that never imports lldb, and prints symbols and lines."""
    folder, _threads = loaded(session, "static")
    script = "import sys; from lldb_trace import cli; sys.exit(cli.main(sys.argv[1:])); "
    blocked = "import sys; sys.modules['lldb'] = None; " + script  # importing lldb would now fail
    result = subprocess.run([sys.executable, "-c", blocked, "dump", str(folder), "-i", "-c", "12", "--id", "40"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == session.ok("pt dump -i -c 12 --id 40")
    assert "; at " in result.stdout and "static`" in result.stdout


def test_options_mean_what_they_mean_in_pt_dump(capsys):
    folder = TRACES / "static"
    for options, message in [
        ("-i -C", "choose one of --instructions and --function-calls"),
        ("--flat", "--flat does not apply to the session info: it is for --function-calls"),
        ("-C --kind", "--kind does not apply to --function-calls"),
        ("-i --id 99999", "--id 99999 is past the end of thread"),
        ("-i -t 77", "the trace has no thread 77"),
        ("-i --file out.txt", "lldb-trace dump prints to its standard output: redirect it, '> out.txt'"),
    ]:
        assert cli.main(["dump", str(folder), *shlex.split(options)]) == 1
        error = capsys.readouterr().err
        assert error.startswith(f"error: {message}") or message in error, (options, error)
        assert error.count("\n") == 1


def test_the_command_line_takes_the_options_of_pt_dump(session):
    """Both parsers are built from one declaration: the same flags and help, but for each one's own options."""
    lldb_help = " ".join(session.ok("help pt dump").split())
    in_lldb = {long: short for short, long in re.findall(r" -(\w) (?:<[\w-]+> )?\( --([\w-]+)", lldb_help)}
    commands = next(action for action in cli._parser()._actions if action.choices and "dump" in action.choices)
    options = [  # (not --file: a hidden option, whose error says to redirect the output)
        action
        for action in commands.choices["dump"]._actions
        if action.option_strings and action.help != argparse.SUPPRESS
    ]
    on_command_line = {action.option_strings[-1][2:]: action for action in options}
    assert set(in_lldb) - set(on_command_line) == {"continue", "file"}  # Enter, and LLDB's output
    # pt load's; LLDB's setting; the environment's LLDB_TRACE_WORKERS inside LLDB
    assert set(on_command_line) - set(in_lldb) == {"search-path", "sysroot", "flavor", "workers"}
    for long, action in on_command_line.items():
        if long in in_lldb and long != "help":
            assert action.option_strings == [f"-{in_lldb[long]}", f"--{long}"]
            assert action.help in lldb_help, long
