"""Debian's lldb-22 in batch mode with the plugin loaded the way the README says (``lldb-trace lldbinit``)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

needs_lldb_22 = pytest.mark.skipif(shutil.which("lldb-22") is None, reason="Debian's lldb-22 is not installed")


def run_lldb_22(tmp_path, commands, timeout=120):
    """``lldb-22 -b`` running ``commands`` after the plugin's lldbinit; the CompletedProcess (text)."""
    init = subprocess.run([str(Path(sys.executable).parent / "lldb-trace"), "lldbinit"], capture_output=True, text=True)
    script = tmp_path / "init.lldb"
    script.write_text(init.stdout)
    return subprocess.run(
        ["lldb-22", "-x", "-b", "-s", str(script), *[part for command in commands for part in ("-o", command)]],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
