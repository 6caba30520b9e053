"""The live intel-pt backend: one perf_event_open intel_pt event per traced thread, read at every stop.

The debugger layer reads the buffers from a stop hook (``read_all``) and adds
threads as they appear (``add_thread``, with ``--all``); see thread_event.py
for the events themselves and pmu.py for what the CPU offers.
"""

from ..cpu import host_cpu
from . import pmu, thread_event


class IntelPtBackend:
    """The events of the traced threads, and each thread's bytes as of the last read."""

    name = "intel-pt"
    drives_stepping = False  # the CPU records; LLDB's own commands move the threads

    def __init__(self, tids, buffer_kb, tsc, psb_period, all_threads):
        self.buffer_kb, self.tsc, self.psb_period, self.all_threads = buffer_kb or 64, tsc, psb_period, all_threads
        self.pmu = pmu.check_available()
        self.cpu = host_cpu()  # the CPU that writes the packets: decoders apply its errata
        self.traces = {}
        self._bytes = {}
        self._generations = {}
        try:
            for tid in tids:
                self.add_thread(tid)
        except Exception:
            self.close()
            raise

    def add_thread(self, tid):
        self.traces[tid] = thread_event.IntelPtThreadEvent(
            tid, self.buffer_kb, tsc=self.tsc, psb_period=self.psb_period, pmu=self.pmu
        )
        self._generations[tid] = 0

    def read_all(self):
        """Pause, copy and resume every thread's buffer that changed since the last read."""
        for tid, trace in self.traces.items():
            if tid not in self._bytes or trace.changed():
                self._bytes[tid] = trace.read()
                self._generations[tid] += 1

    def trace_bytes(self, tid):
        if tid not in self.traces:
            return None
        if tid not in self._bytes:
            self.read_all()
        return self._bytes.get(tid) or None

    def generation(self, tid):
        return self._generations.get(tid, 0)

    def snapshot(self):
        """Every thread's trace now (for ``pt stop``): the buffers read once more, before they are closed."""
        self.read_all()
        return {tid: self._bytes.get(tid) or None for tid in self.traces}

    def close(self):
        for trace in self.traces.values():
            trace.close()
