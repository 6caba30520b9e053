"""A Debug Adapter Protocol server over the plugin: ``lldb-trace dap`` (docs/dap.md).

protocol.py frames messages, server.py reads and answers them, session.py
owns the in-process LLDB; stepping.py, inspection.py, console.py,
breakpoints.py and code.py answer the requests.  Importing this package
imports no ``lldb``: the command line imports command_line.py for every command.
"""

import sys


def main(argv=None):
    """``lldb-trace dap`` with ``argv`` (default: this process's arguments); the exit status."""
    from ..cli import main as cli_main

    return cli_main(["dap", *(sys.argv[1:] if argv is None else argv)])
