"""The one exception family of lldb_trace.

Every error a user can cause (bad bundle, missing library, unsupported
hardware, ...) is raised as a subclass of :class:`LldbTraceError` whose
``str()`` is one line saying what is wrong and how to fix it.  Commands catch
this base class and print the message; anything else is a bug.
"""


class LldbTraceError(Exception):
    """A user-facing error with a one-line message."""
