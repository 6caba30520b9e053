"""Hostile bundle documents: numbers and names no file can have are one-line errors, in the API and in LLDB."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import hostile_inputs
from support.lldb22 import needs_lldb_22, run_lldb_22

import lldb_trace.api as pt
from lldb_trace.bundle.loader import BundleError

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from support.lldb_session import Session  # noqa: E402

CLI = Path(sys.executable).parent / "lldb-trace"


def test_a_pid_longer_than_python_parses_is_a_one_line_error(tmp_path):
    bundle = hostile_inputs.pid_of_digits(tmp_path)
    with pytest.raises(BundleError, match=r"trace\.json: a number in the bundle has thousands of digits"):
        pt.open_bundle(bundle)
    result = subprocess.run([CLI, "dump", bundle], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "thousands of digits" in result.stderr


def test_a_file_name_too_long_for_the_file_system_names_its_json_path(tmp_path):
    bundle = hostile_inputs.file_name_too_long(tmp_path)
    said = r"processes\[0\]\.modules\[0\]\.file: module .*/mmmm+ cannot be reached: File name too long"
    with pytest.raises(BundleError, match=said):
        pt.open_bundle(bundle)


def test_a_path_with_a_lone_surrogate_is_an_error_lldb_can_show(tmp_path):
    bundle = hostile_inputs.path_with_surrogate(tmp_path)
    with pytest.raises(BundleError) as refused:
        pt.open_bundle(bundle)
    assert str(refused.value).endswith("traces/5707.ipt\udcff does not exist: fix the path")
    session = Session(tmp_path)
    try:
        result = session.handle(f"pt load {bundle}")
        assert not result.Succeeded()
        assert result.GetError().endswith("traces/5707.ipt\\udcff does not exist: fix the path\n")
    finally:
        session.close()


def test_a_module_name_no_file_system_takes_is_an_error_lldb_can_show(tmp_path):
    bundle = hostile_inputs.path_with_surrogate(tmp_path, key="file")
    session = Session(tmp_path)
    try:
        result = session.handle(f"pt load {bundle}")
        assert "processes[0].modules[0].file: module " in result.GetError()
        assert "modules/crash\\ud800 cannot be a file's name" in result.GetError()  # an unpaired surrogate
    finally:
        session.close()


@needs_lldb_22
def test_a_path_with_a_lone_surrogate_is_a_one_line_error_in_lldb_22(tmp_path):
    bundle = hostile_inputs.path_with_surrogate(tmp_path)
    result = run_lldb_22(tmp_path, [f"trace load {bundle}"])
    assert "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {bundle}: processes[0].threads[0].iptTrace: trace file {tmp_path}/traces/5707.ipt\\udcff does "
        "not exist: fix the path"
    ]


def test_a_trace_file_whose_name_is_no_utf_8_loads_and_shows_escaped(tmp_path):
    bundle = hostile_inputs.path_with_surrogate(tmp_path)
    traces = os.fsencode(tmp_path / "traces")
    os.rename(traces + b"/5707.ipt", traces + b"/5707.ipt\xff")  # the name JSON's "\udcff" stands for
    assert pt.open_bundle(bundle).threads[0].decoded.instruction_count
    session = Session(tmp_path)
    try:
        session.ok(f"pt load {bundle}")
        assert f"trace file: {tmp_path}/traces/5707.ipt\\udcff (461 bytes)" in session.ok("pt dump")
    finally:
        session.close()


def test_a_bundle_path_typed_with_a_byte_that_is_no_utf_8_is_a_one_line_error(tmp_path):
    missing = os.fsencode(tmp_path) + b"/trace\xff.json"
    lldb_binary = Path(sys.executable).parent / "lldb"
    commands = ["-o", "command script import lldb_trace", "-o", b"pt load " + missing]
    result = subprocess.run([lldb_binary, "-x", "-b", *commands], capture_output=True, timeout=60)
    errors = [line for line in result.stderr.decode("utf-8", "replace").splitlines() if line.startswith("error:")]
    assert errors == [
        f'error: the argument "{tmp_path}/trace\ufffd.json" is not UTF-8 text, which LLDB cannot pass to a Python '
        "command: give the file a UTF-8 name, or a symbolic link with one"
    ]


def test_a_module_whose_name_is_no_utf_8_decodes_and_lldb_says_it_cannot_name_it(tmp_path):
    bundle = hostile_inputs.path_with_surrogate(tmp_path, key="file")
    bundle.write_text(bundle.read_text().replace("\\ud800", "\\udcff"))  # a name that exists: its last byte is 0xff
    modules = os.fsencode(tmp_path / "modules")
    os.rename(modules + b"/crash", modules + b"/crash\xff")
    thread = pt.open_bundle(bundle).threads[0]
    assert "crash\udcff`main" in {item.function for item in thread.items(limit=100)}
    session = Session(tmp_path)
    try:
        error = session.handle(f"pt load {bundle}").GetError()
        assert error == (
            f"error: LLDB cannot open module {tmp_path}/modules/crash\\udcff: its file name is not UTF-8 text, "
            "which LLDB's Python API cannot pass: give the file a UTF-8 name\n"
        )
        assert session.debugger.GetNumTargets() == 0
    finally:
        session.close()
