"""A live trace after ``pt stop``: readable and savable until the process runs on untraced.

``pt stop`` ends recording (the backend lets go of the process and the CPU)
but keeps what was recorded: a FrozenBackend holds each thread's bytes as
they were at that stop.  The trace describes the process only while it stays
at that stop, so it expires when the process's natural stop id (which
expression evaluation leaves alone) changes: the first lookup after that
drops it and says why.  A lookup-time check, rather than a stop hook, also
catches a process that was killed or detached without stopping again.
"""


class FrozenBackend:
    """What a stopped session's LiveProcessTrace reads: the bytes its backend held at ``pt stop``."""

    def __init__(self, backend):
        self.name = f"{backend.name}; tracing stopped"
        self._bytes = backend.snapshot()
        self._generations = {tid: backend.generation(tid) for tid in self._bytes}  # keeps decodes cached

    def trace_bytes(self, tid):
        return self._bytes.get(tid)

    def generation(self, tid):
        return self._generations.get(tid, 0)


def ran_on(process, stop_id):
    """A check for registry.expire_when: why the trace no longer describes ``process``, or None."""
    pid = process.GetProcessID()

    def expired():
        if process.IsValid() and process.is_alive and process.GetStopID() == stop_id:
            return None
        return (
            f"process {pid} ran on untraced after 'pt stop', so its trace was dropped"
            " ('trace save' before resuming keeps one; 'pt start' records again)"
        )

    return expired
