"""One traced process of a bundle, with its threads decoded lazily and cached.

The LLDB-facing layers hold one ProcessTrace per target; nothing here
imports ``lldb``, so scripts can use it directly.
"""

from . import libipt
from .decode import decode_trace, process_image
from .errors import LldbTraceError


class UnknownThreadError(LldbTraceError):
    """A tid that the trace does not have."""


class ProcessTrace:
    """``bundle``'s process ``process``: its threads' decoded traces, decoded on first use."""

    def __init__(self, bundle, process):
        self.bundle = bundle
        self.process = process
        self._image = None
        self._decoded = {}

    @property
    def pid(self):
        return self.process.pid

    @property
    def tids(self):
        return [thread.tid for thread in self.process.threads]

    def thread(self, tid):
        for thread in self.process.threads:
            if thread.tid == tid:
                return thread
        known = ", ".join(map(str, self.tids))
        raise UnknownThreadError(f"process {self.pid} has no traced thread {tid} (its threads: {known})")

    @property
    def cpu(self):
        """The libipt Cpu for errata, or None when the bundle's CPU is unknown."""
        cpu = self.bundle.cpu
        return libipt.Cpu(cpu.family, cpu.model, cpu.stepping) if cpu.vendor == "intel" else None

    def decoded(self, tid):
        """The DecodedThread of ``tid``, or None when the thread has no trace of its own."""
        if tid not in self._decoded:
            thread = self.thread(tid)
            if thread.trace is None:
                return None
            if self._image is None:
                self._image = process_image(self.process)
            self._decoded[tid] = decode_trace(thread.trace.read_bytes(), self.cpu, self._image)
        return self._decoded[tid]

    def decoded_if_done(self, tid):
        """The DecodedThread of ``tid`` if it was already decoded (info commands must not decode)."""
        return self._decoded.get(tid)

    def end_ip(self, tid):
        """Where the thread's trace ends: the pc it is shown stopped at (None if nothing decoded)."""
        decoded = self.decoded(tid)
        return decoded.end_ip if decoded else None
