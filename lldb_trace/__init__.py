"""lldb_trace: Intel Processor Trace debugging for any LLDB >= 19.

``command script import lldb_trace`` calls :func:`__lldb_init_module`, which
registers the ``pt`` commands.  Importing the package from plain Python (for
the libipt binding, the decoder or the recorder) never imports ``lldb``.
"""

__version__ = "0.1.0"


def __lldb_init_module(debugger, _internal_dict):
    try:
        from .commands import register
    except ImportError as error:  # LLDB's Python lacks what the plugin needs: say so in one line, not a traceback
        import sys

        version = ".".join(map(str, sys.version_info[:2]))
        print(
            f"error: lldb_trace cannot load in this LLDB's Python {version}: {error}. Install the plugin for it "
            "('bash scripts/setup.sh' in a checkout) and load it with the lines 'lldb-trace lldbinit' prints",
            file=sys.stderr,
            flush=True,
        )
        return
    register(debugger)
