"""Profiles: where a stretch of one thread's history spent its instructions and time, by function, line or module.

Built from the call forest's frames (lldb_trace.analysis) and, by line or
module, from the decoded blocks counted per address; no LLDB here.
``profile(thread, by="line")`` (a TracedThread, as api.ThreadTrace is)
gives a Profile whose rows the views show (views/profile.py).
"""

from .profile import GROUPINGS, SORTS, Profile, ProfileError, ProfileRow, profile

__all__ = ["GROUPINGS", "SORTS", "Profile", "ProfileError", "ProfileRow", "profile"]
