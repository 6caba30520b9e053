"""lldb_trace: Intel Processor Trace debugging for any LLDB >= 19.

``command script import lldb_trace`` calls :func:`__lldb_init_module`, which
registers the ``pt`` commands.  Importing the package from plain Python (for
the libipt binding, the decoder or the recorder) never imports ``lldb``.
"""

__version__ = "0.1.0"


def __lldb_init_module(debugger, _internal_dict):
    from .commands import register

    register(debugger)
