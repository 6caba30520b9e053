"""Sources of a bundle's traces on disk: a file per thread, or per-cpu files split among the threads."""

import mmap
import os
from dataclasses import replace

from . import per_cpu


class FileSource:
    """One trace file per thread, as the bundle names them; the bytes never change."""

    name = "files"

    def __init__(self, process):
        self._threads = {thread.tid: thread for thread in process.threads}
        self._mapped = {}

    def trace_bytes(self, tid):
        """The trace file mapped, not read: decoding its end touches only the pages of its end."""
        if tid not in self._mapped:
            self._mapped[tid] = _mapped(self._threads[tid].trace)
        return self._mapped[tid]

    def generation(self, _tid):
        return 0

    def breaks(self, _tid):
        return ()

    def describe(self, tid):
        thread = self._threads[tid]
        return {"traceFile": str(thread.trace) if thread.trace else None, "traceSize": thread.trace_size}

    def memory_modules(self):
        return ()

    def stop(self, _tid):
        return None  # the bundle says how its threads stopped


def _mapped(path):
    """``path``'s bytes as a private (copy-on-write) mapping: writable, so libipt can use it in place."""
    if path is None:
        return None
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        return mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY) if size else b""


class PerCpuSource:
    """Each core's trace cut at its context switches and joined per thread (split once, when opened).

    Splitting when the process is opened makes a damaged switch file fail the load, not a later dump.
    """

    name = "per-cpu files"

    def __init__(self, bundle, tids):
        self._streams = per_cpu.thread_streams(bundle, tids)
        self._cpu_breaks = {cpu.cpu_id: cpu.breaks for cpu in bundle.cpus if cpu.breaks}

    def trace_bytes(self, tid):
        stream = self._streams.get(tid)
        return bytes(stream) if stream is not None and stream.data else None

    def generation(self, _tid):
        return 0

    def breaks(self, tid):
        """Where a cpu's trace was lost (a perf.data's), placed in the thread's stream."""
        stream = self._streams.get(tid)
        if stream is None or not self._cpu_breaks:
            return ()
        found = {}
        for piece in stream.pieces:
            for lost in self._cpu_breaks.get(piece.cpu, ()):
                if piece.cpu_offset <= lost.offset < piece.cpu_offset + piece.size:
                    at = (
                        piece.start
                        if lost.offset == piece.cpu_offset
                        else piece.offset + lost.offset - piece.cpu_offset
                    )
                    found.setdefault(at, replace(lost, offset=at))
        return tuple(found[at] for at in sorted(found) if at > 0)

    def describe(self, tid):
        stream = self._streams.get(tid)
        if stream is None:
            return {"perCpu": {"bytes": 0, "pieces": 0, "cpus": [], "executions": 0, "droppedBytes": 0}}
        return {
            "perCpu": {
                "bytes": len(stream.data),
                "pieces": len(stream.pieces),
                "cpus": sorted({piece.cpu for piece in stream.pieces}),
                "executions": len(stream.executions),
                "droppedBytes": stream.dropped,
            }
        }

    def memory_modules(self):
        return ()

    def stop(self, _tid):
        return None  # the bundle says how its threads stopped


class AuxStreamSource:
    """A perf.data recorded per thread: each thread's AUXTRACE buffers joined (perf_data.aux_streams)."""

    name = "perf.data"

    def __init__(self, path, streams):
        self._path = path
        self._streams = streams  # tid -> AuxStream

    def trace_bytes(self, tid):
        stream = self._streams.get(tid)
        return stream.data if stream is not None and len(stream) else None

    def generation(self, _tid):
        return 0

    def breaks(self, tid):
        stream = self._streams.get(tid)
        return stream.breaks if stream is not None else ()

    def describe(self, tid):
        stream = self._streams.get(tid)
        return {
            "traceFile": str(self._path),
            "traceSize": len(stream) if stream is not None else 0,
            "auxBuffers": stream.buffers if stream is not None else 0,
            "dataLost": [{"offset": b.offset, "reason": b.reason} for b in stream.breaks] if stream else [],
        }

    def memory_modules(self):
        return ()

    def stop(self, _tid):
        return None
