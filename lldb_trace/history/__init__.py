"""Time travel over a trace, without LLDB: positions, the frames at any point, stepping both ways, search.

``ThreadHistory(thread)`` (a TracedThread) holds a thread's position
(an item index; ``end`` is where the thread stopped) and moves it with GDB's
semantics: ``stepi``/``nexti``/``step``/``next``/``finish`` forwards or in
reverse, ``continue_`` to breakpoints either way, ``goto``; ``frames()`` are
the calls open at the position (frames.py), ``find`` lists executions
(search.py).  ``for_thread`` keeps one history per traced thread (kept_histories.py), so a
position survives between commands (and starts again at the end when a live
trace grows).  The debugger layer shows these positions in LLDB.
"""

from .frames import Frame
from .kept_histories import for_thread
from .movement import NO_MORE_HISTORY, HistoryError, Movement
from .search import Match
from .thread_history import ThreadHistory, describe_position

__all__ = [
    "NO_MORE_HISTORY",
    "Frame",
    "HistoryError",
    "Match",
    "Movement",
    "ThreadHistory",
    "describe_position",
    "for_thread",
]
