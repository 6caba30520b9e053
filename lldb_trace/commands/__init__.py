"""LLDB commands: the only layer (with target/) that imports ``lldb``.

Each command family lives in its own module and is registered under the
``pt`` container by :func:`register`.
"""

import lldb

from ..errors import LldbTraceError

CONTAINER = "pt"
CONTAINER_HELP = "Intel Processor Trace: load, inspect and record control-flow traces (lldb_trace)."


def run(debugger, command):
    """Run an LLDB command quietly; raise LldbTraceError with LLDB's message on failure."""
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    if not result.Succeeded():
        raise LldbTraceError(f"'{command}' failed: {result.GetError().strip()}")
    return result.GetOutput()


def register(debugger):
    """Create (or re-create, on a repeated import) the ``pt`` container."""
    run(debugger, f'command container add -o -h "{CONTAINER_HELP}" {CONTAINER}')
