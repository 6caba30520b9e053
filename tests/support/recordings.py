"""A test program of test_traces/src built and recorded with ``lldb-trace record``, for tests that need a fresh
recording of this machine's run (its cores, its register states)."""

import subprocess
import sys
from pathlib import Path

from .paths import SOURCES


def record_program(folder, source, compiler="gcc", flags=("-O0", "-g", "-no-pie")):
    """Builds ``SOURCES/source`` into ``folder`` and records its run; the bundle's trace.json."""
    binary = folder / Path(source).stem
    subprocess.run([compiler, *flags, "-o", str(binary), str(SOURCES / source)], check=True)
    command = [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(folder / "rec"), "--", str(binary)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return folder / "rec" / "trace.json"
