"""Trace bundles: the JSON file that names a trace's CPU, processes, threads and modules.

Plain Python (no ``lldb``): :func:`load_bundle` turns a bundle file into a
checked :class:`Bundle`, or raises :class:`BundleError` with one line naming
the JSON path or file at fault.  A perf.data makes the same Bundle through
perf_data/; lldb_trace.trace_files.load_trace chooses between the two.
"""

from .loader import BundleError, load_bundle
from .model import Bundle, CpuInfo, CpuTrace, Kernel, Module, Process, Thread, TscConversion
from .schemas import SchemaError, render_schema, schema, schema_names

__all__ = [
    "Bundle",
    "BundleError",
    "CpuInfo",
    "CpuTrace",
    "Kernel",
    "Module",
    "Process",
    "SchemaError",
    "Thread",
    "TscConversion",
    "load_bundle",
    "render_schema",
    "schema",
    "schema_names",
]
