"""Decode trace bundles with the system's native LLDB (lldb-22 and its intel-pt plugin) as a reference.

Native LLDB's Python module can't be imported into the venv: the venv's pip ``lldb`` module shadows it and has
no intel-pt plugin. So the native side runs in its own /usr/bin/python3 process, and only JSON crosses over.
"""

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

LLDB = "lldb-22"
PYTHON = "/usr/bin/python3"
TIMEOUT = 120


def _native_python_path():
    """The directory holding lldb-22's ``lldb`` package, as ``lldb-22 -P`` reports it, or None without lldb-22."""
    exe = shutil.which(LLDB)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-P"], capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


NATIVE_PYTHON_PATH = _native_python_path()

# Runs under /usr/bin/python3: argv is bundle, output file, dump directory, and optionally a tid.
# Each thread's items are dumped with --file so no LLDB chatter on stdout can corrupt the JSON.
_SCRIPT = r"""
import json, os, sys
import lldb

bundle, out_path, dump_dir = sys.argv[1:4]
wanted = int(sys.argv[4]) if len(sys.argv) > 4 else None

debugger = lldb.SBDebugger.Create(False)
debugger.SetAsync(False)
interp = debugger.GetCommandInterpreter()


def run(command):
    result = lldb.SBCommandReturnObject()
    interp.HandleCommand(command, result)
    if not result.Succeeded():
        sys.exit(f"{command!r} failed: {result.GetError()}")


run(f'trace load "{bundle}"')
process = debugger.GetSelectedTarget().GetProcess()
items = {}
for thread in process.threads:
    tid = thread.GetThreadID()
    if wanted is not None and tid != wanted:
        continue
    process.SetSelectedThread(thread)
    dump = os.path.join(dump_dir, f"{tid}.json")
    run(f'thread trace dump instructions --forwards --all --json --file "{dump}"')
    with open(dump) as f:
        items[tid] = json.load(f)
with open(out_path, "w") as f:
    json.dump(items, f)
lldb.SBDebugger.Destroy(debugger)
"""


def _env():
    """A minimal environment, so nothing from the venv (VIRTUAL_ENV, PYTHONPATH, PATH) leaks into native Python."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": NATIVE_PYTHON_PATH or ""}
    for name in ("HOME", "LANG", "LC_ALL", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@functools.cache
def available():
    """True when lldb-22's Python bindings import under the system Python, i.e. native decoding can run."""
    if NATIVE_PYTHON_PATH is None or not Path(PYTHON).exists():
        return False
    try:
        proc = subprocess.run(
            [PYTHON, "-s", "-c", "import lldb"], env=_env(), capture_output=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _item(dumped):
    """One JSON trace item as our tests compare it: an int load address, or ``"error: <text>"`` for a gap."""
    if "error" in dumped:
        return f"error: {dumped['error']}"
    return int(dumped["loadAddress"], 16)


def decode_addresses(bundle_json_path, tid=None, timeout=TIMEOUT):
    """Per thread id, every item native LLDB decodes from the bundle, oldest first (events are left out).

    ``tid`` limits the decode to one thread. Raises RuntimeError, with LLDB's stderr, if native LLDB fails.
    """
    bundle = str(Path(bundle_json_path).resolve())
    with tempfile.TemporaryDirectory(prefix="native-lldb-") as tmp:
        out_path = os.path.join(tmp, "items.json")
        args = [PYTHON, "-s", "-c", _SCRIPT, bundle, out_path, tmp]
        if tid is not None:
            args.append(str(tid))
        try:
            proc = subprocess.run(args, env=_env(), cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"native LLDB timed out after {timeout}s decoding {bundle}") from e
        if proc.returncode != 0 or not os.path.exists(out_path):
            raise RuntimeError(
                f"native LLDB failed to decode {bundle} (exit {proc.returncode}):\n{proc.stderr.strip()}"
            )
        with open(out_path) as f:
            raw = json.load(f)
    return {int(t): [_item(e) for e in dumped if "event" not in e] for t, dumped in raw.items()}
