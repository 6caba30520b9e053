"""Linux perf.data files with Intel PT traces: loaded as bundles, and written from any loaded trace.

The perf.data side of the data flow (plain Python, no ``lldb``):
:mod:`.reader` maps a file and keeps the records a trace needs (a Recording),
:mod:`.aux_streams` joins its AUXTRACE buffers into one stream per thread or
cpu with the places data was lost, :mod:`.binaries` finds the programs it
names, and :mod:`.loading` makes the Bundle the debugger loads like any other.
:mod:`.writer` goes the other way, for ``trace save --format perf``, and
:mod:`.saving` puts the file in place whole.  The
layouts themselves (header, features, records) are the perf ABI's, in
:mod:`lldb_trace.perf`.
"""

from .binaries import BinarySearch
from .loading import load_perf_data
from .reader import PerfDataError
from .saving import cpu_streams, save_perf_data
from .writer import perf_data_bytes

__all__ = ["BinarySearch", "PerfDataError", "cpu_streams", "load_perf_data", "perf_data_bytes", "save_perf_data"]
