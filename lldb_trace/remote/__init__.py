"""Any trace served as a gdb-remote target with reverse execution (``lldb-trace serve``), without LLDB.

GDB (``target remote``), LLDB (``gdb-remote``, ``process continue --reverse``)
and IDEs that speak the GDB remote protocol (CodeLLDB's reverse debugging)
connect to it.  The data flow: the trace loads as it does for the Python API
(``api.open_bundle``); replay.py keeps each thread's position and moves it with
``lldb_trace.history``'s rules; server.py answers packets from it (registers.py,
libraries.py, host_files.py, monitor.py); connection.py frames the packets
(packets.py) on stdio or a TCP socket.
"""

from .replay import Replay
from .server import Server

__all__ = ["Replay", "Server"]
