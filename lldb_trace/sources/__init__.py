"""Trace sources: where each thread's raw Intel PT bytes come from (plain Python, no ``lldb``).

Every source answers the questions of the TraceSource protocol
(trace_source.py): a thread's bytes and their generation, where they come
from, how the thread stopped, where the bytes break, and the modules that
exist only in memory.

FileSource reads one file per thread, AuxStreamSource a perf.data's buffers
per thread, PerCpuSource splits per-cpu traces (files or a perf.data's) among
threads with their context switches (per_cpu.py), and LiveSource reads a
capture backend of a live process.
"""

from .files import AuxStreamSource, FileSource, PerCpuSource
from .live import FrozenBackend, LiveSource, live_module
from .trace_source import MemoryModule, TraceBytes, TraceSource

__all__ = [
    "AuxStreamSource",
    "FileSource",
    "FrozenBackend",
    "LiveSource",
    "MemoryModule",
    "PerCpuSource",
    "TraceBytes",
    "TraceSource",
    "live_module",
]
