"""Running an LLDB command from the plugin's own code, with its failure as an exception."""

import lldb

from ..errors import LldbTraceError


def run_command(debugger, command):
    """Run ``command`` quietly; raise LldbTraceError with LLDB's message when it fails; returns its output."""
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    if not result.Succeeded():
        raise LldbTraceError(f"'{command}' failed: {result.GetError().strip()}")
    return result.GetOutput()
