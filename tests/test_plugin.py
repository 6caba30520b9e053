"""The plugin inside a real in-process LLDB, and the lldb-trace console script."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.lldb22 import needs_lldb_22
from support.paths import ROOT
from support.sample_trace import SAMPLE

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")


@pytest.fixture
def debugger():
    debugger = lldb.SBDebugger.Create(False)
    debugger.SetAsync(False)
    yield debugger
    lldb.SBDebugger.Destroy(debugger)


def handle(debugger, command):
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result


def test_import_registers_pt_quietly(debugger):
    assert not debugger.GetCommandInterpreter().CommandExists("pt")
    result = handle(debugger, "command script import lldb_trace")
    assert result.Succeeded(), result.GetError()
    assert result.GetOutput() == "" and result.GetError() == ""
    assert debugger.GetCommandInterpreter().UserCommandExists("pt")
    assert "Intel Processor Trace" in handle(debugger, "help pt").GetOutput()


def test_import_twice_is_harmless(debugger):
    assert handle(debugger, "command script import lldb_trace").Succeeded()
    again = handle(debugger, "command script import lldb_trace")
    assert again.Succeeded(), again.GetError()
    assert handle(debugger, "help pt").Succeeded()


def test_lldb_binary_loads_the_plugin_in_batch_mode():
    lldb_binary = Path(sys.executable).parent / "lldb"
    if not lldb_binary.exists():
        pytest.skip("no lldb binary beside this Python")
    result = subprocess.run(
        [str(lldb_binary), "--batch", "-o", "command script import lldb_trace", "-o", "help pt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Intel Processor Trace" in result.stdout
    assert "error" not in result.stderr.lower()


def cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "lldb_trace.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_cli_versions():
    result = cli("versions")
    assert result.returncode == 0
    assert "libipt     2.0." in result.stdout
    assert "capstone" in result.stdout and "lldb       lldb version" in result.stdout


def test_cli_packets_lists_the_sample(sample_expected):
    result = cli("packets", str(SAMPLE / "4242.ipt"))
    assert result.returncode == 0, result.stderr
    kinds = [line.split()[1] for line in result.stdout.splitlines()]
    assert kinds == ["psb", "tsc", "psbend", "mode", "tip.pge", "tnt.8", "tip", "tip.pgd"]
    assert "tnt.8    !!." in result.stdout
    assert f"ip={sample_expected[0]:#x}" in result.stdout


def test_cli_packets_on_garbage_and_missing_files(tmp_path):
    noise = tmp_path / "noise.ipt"
    noise.write_bytes(bytes(range(1, 250)))
    result = cli("packets", str(noise))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {noise}: no PSB packet in its 249 bytes: it is no Intel PT trace, or it was cut before its first PSB"
    )
    empty = cli("packets", "")
    assert empty.stderr.strip() == "error: the path is empty: give the path of the raw Intel PT trace file"
    missing = cli("packets", str(tmp_path / "absent.ipt"))
    assert missing.returncode == 1
    assert (
        missing.stderr.strip() == f"error: cannot read trace file {tmp_path / 'absent.ipt'}: No such file or directory"
    )


def test_cli_reports_missing_libipt_in_one_line():
    result = cli("packets", str(SAMPLE / "4242.ipt"), LIBIPT_PATH="/nonexistent/libipt.so.2")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: cannot load libipt from LIBIPT_PATH")


def test_cli_lldbinit_lines_load_the_plugin():
    lines = cli("lldbinit").stdout.splitlines()
    assert lines[0].startswith("script import site; site.addsitedir(")
    assert lines[1] == "command script import lldb_trace"


def test_a_checkout_named_lldb_trace_in_the_working_folder_does_not_hide_the_plugin(tmp_path):
    """LLDB puts its working folder on sys.path: a checkout there must not import as an empty namespace package."""
    lldb_binary = Path(sys.executable).parent / "lldb"
    if not lldb_binary.exists():
        pytest.skip("no lldb binary beside this Python")
    (tmp_path / "lldb_trace").symlink_to(ROOT, target_is_directory=True)
    commands = ["command script import lldb_trace", "script import lldb_trace; print(lldb_trace.__file__)", "help pt"]
    result = subprocess.run(
        [str(lldb_binary), "--batch", *[part for command in commands for part in ("-o", command)]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert "Intel Processor Trace" in result.stdout, result.stdout + result.stderr
    assert str(ROOT / "lldb_trace" / "__init__.py") in result.stdout  # the installed package, not the folder


@needs_lldb_22
def test_an_lldb_whose_python_lacks_the_plugin_says_so_in_one_line(tmp_path):
    """lldb-22 without the lines 'lldb-trace lldbinit' prints: its own Python finds the checkout but not numpy."""
    (tmp_path / "lldb_trace").symlink_to(ROOT, target_is_directory=True)
    result = subprocess.run(
        ["lldb-22", "-x", "--batch", "-o", "command script import lldb_trace", "-o", "help pt"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    loaded = "Intel Processor Trace" in result.stdout  # a system Python with every dependency installed
    assert loaded or "error: lldb_trace cannot load in this LLDB's Python" in result.stderr, output
