"""Trace sources: where each thread's raw Intel PT bytes come from (plain Python, no ``lldb``).

A ProcessTrace decodes whatever its source gives it and asks nothing else about
where the bytes came from.  Every source answers the same questions:

- ``trace_bytes(tid)``: the thread's whole raw trace, or None if it has none;
- ``generation(tid)``: a number that changes whenever those bytes change (a
  live trace grows at every stop), so decodes are redone only then;
- ``describe(tid)``: what ``trace dump`` shows of where the bytes come from;
- ``memory_modules()``: modules that exist only in memory (the vdso of a
  live process), as ``(system path, load address, bytes)``, for ``trace save``;
- ``stop(tid)``: how the thread stopped, where the source knows it (a live
  thread stopped by a signal), else None and the bundle's word holds;
- ``breaks(tid)``: where the bytes stop continuing each other (trace lost
  while recording, as a perf.data can say), each decoded past with a gap;
- ``name``: the kind of source, as ``trace dump`` names the bundle format.

FileSource reads one file per thread, AuxStreamSource a perf.data's buffers
per thread, PerCpuSource splits per-cpu traces (files or a perf.data's) among
threads with their context switches (per_cpu.py), and LiveSource reads a
capture backend of a live process.
"""

from .files import AuxStreamSource, FileSource, PerCpuSource
from .live import FrozenBackend, LiveSource, live_module

__all__ = ["AuxStreamSource", "FileSource", "FrozenBackend", "LiveSource", "PerCpuSource", "live_module"]
