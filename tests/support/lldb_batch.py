"""An LLDB binary in batch mode in a child process, for what an in-process LLDB cannot show (stderr, exit status)."""

import subprocess
import sys
from pathlib import Path

from .paths import ROOT

SITE_PACKAGES = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
# The commands that load this checkout's plugin into an LLDB whose Python is not this one (Debian's lldb-22).
LOAD_PLUGIN = [
    f"script import site; site.addsitedir('{SITE_PACKAGES}'); site.addsitedir('{ROOT}')",
    "command script import lldb_trace",
]


def lldb_batch(binary, *commands, cwd=None):
    """``binary --no-lldbinit --batch`` running ``commands``: its CompletedProcess (text)."""
    args = [binary, "--no-lldbinit", "--batch"]
    for command in commands:
        args += ["-o", command]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd)
