"""``lldb-trace dap``: the Debug Adapter Protocol server on stdio, as a subcommand of the command line.

This module is imported by cli.py for every command, so it imports nothing
of LLDB: the server (which needs LLDB's Python bindings) is imported when
the subcommand runs, and a Python without the bindings gets one line saying
how to get them.
"""

from ..errors import LldbTraceError

DESCRIPTION = (
    "Serve the Debug Adapter Protocol on stdin and stdout, for VS Code, nvim-dap or any DAP client: 'launch' with"
    ' {"trace": PATH} loads a trace bundle or perf.data into an LLDB with the plugin, and the client steps through'
    " its history both ways (docs/dap.md)."
)


def add_dap_parser(commands):
    dap = commands.add_parser(
        "dap", help="serve the Debug Adapter Protocol on stdio (for IDEs)", description=DESCRIPTION
    )
    dap.set_defaults(run=_run)


def _run(_args):
    try:
        import lldb  # noqa: F401 (only to say what is missing before any message is read)
    except ImportError:
        raise LldbTraceError(
            "lldb-trace dap needs LLDB's Python bindings, which this Python lacks: pip install 'lldb-trace[lldb]',"
            " or run it with the Python of an LLDB that has them"
        ) from None
    from .server import serve_stdio

    serve_stdio()
