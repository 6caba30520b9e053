"""What a trace shows: the session info, instructions, events, the call tree and the packet listing.

Built like LLDB's TraceDumper, outside the debugger (no ``lldb`` import): a
view walks the trace object's cursor (or its events, or its call forest)
once and produces what it shows (shown.py) with everything already looked up
through a symbolizer; a text writer and a JSON writer render them.
``pt dump`` and ``lldb-trace dump`` share the views and the meaning of their
options (options.py), so they print the same for the same trace.
"""

from .dump import Continuation, dump_thread, render, render_info
from .info import info_text, session_info
from .options import INFO, DumpOptions, dump_options

__all__ = [
    "INFO",
    "Continuation",
    "DumpOptions",
    "dump_options",
    "dump_thread",
    "info_text",
    "render",
    "render_info",
    "session_info",
]
