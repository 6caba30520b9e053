"""Subscribers: Python callbacks on a thread's calls, returns, gaps and instructions, in trace order.

``walk(thread, {"call": f, ...}, functions=, modules=, item_range=)`` (a TracedThread) is
what ``ThreadTrace.walk`` and ``pt script`` run.  Filters are resolved once
and applied with numpy, so the events they leave out cost no Python; a
callback returning ``False`` (or raising StopWalk) ends the walk.  No LLDB here.
"""

from .events import KINDS, Event, StopWalk, WalkSummary
from .filters import FilterError
from .walker import WalkError, walk

__all__ = ["KINDS", "Event", "FilterError", "StopWalk", "WalkError", "WalkSummary", "walk"]
