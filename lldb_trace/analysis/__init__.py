"""Analyses over a stretch of one thread's history: the calls in it as columns, and their times.

``frame_columns.frames_of(thread, item_range)`` (a TracedThread) is the shared input of
profiles (lldb_trace.profile), exports (lldb_trace.export) and subscriber
walks (lldb_trace.subscribe).  No LLDB here: it works from plain Python.
"""

from .frame_columns import Frames, frames_of
from .item_range import ItemRange, parse_range
from .times import ThreadTimes

__all__ = ["Frames", "ItemRange", "ThreadTimes", "frames_of", "parse_range"]
