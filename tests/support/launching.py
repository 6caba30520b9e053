"""Launching real programs from tests: an lldb-server for LLDB to use, and a freshly built program."""

import os
import subprocess
from pathlib import Path

import lldb
import pytest

from .paths import SOURCES


def debugserver():
    """The lldb-server next to the pip LLDB (LLDB looks beside its own library otherwise)."""
    if os.environ.get("LLDB_DEBUGSERVER_PATH"):
        return os.environ["LLDB_DEBUGSERVER_PATH"]
    for root in map(Path, lldb.__path__):
        for candidate in [
            *root.parent.glob("lldb_for_pwndbg/_vendor/bin/lldb-server"),
            Path("/usr/bin/lldb-server-22"),
        ]:
            if candidate.exists():
                return str(candidate)
    return None


def launchable(tmp_path, monkeypatch, source, *flags, directory=None):
    """``test_traces/src/<source>`` built with ``flags``, with LLDB pointed at an lldb-server (or the test skipped)."""
    server = debugserver()
    if server is None:
        pytest.skip("no lldb-server to launch processes with")
    monkeypatch.setenv("LLDB_DEBUGSERVER_PATH", server)
    binary = (directory or tmp_path) / Path(source).stem
    binary.parent.mkdir(exist_ok=True)
    subprocess.run(["gcc", "-g", *flags, "-o", str(binary), str(SOURCES / source)], check=True)
    return binary
