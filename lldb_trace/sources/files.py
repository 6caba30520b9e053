"""Sources of a bundle's traces on disk: a file per thread, or per-cpu files split among the threads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LldbTraceError
from . import per_cpu
from .mapped_file import map_file
from .trace_source import MemoryModule, TraceBytes

if TYPE_CHECKING:
    from ..bundle.model import Bundle, Process, ThreadStop
    from ..perf_data.aux_streams import AuxStream, Break


class TraceFileError(LldbTraceError):
    """A thread's trace file cannot be read any more (it was removed or made unreadable since the load)."""


class FileSource:
    """One trace file per thread, as the bundle names them; the bytes never change."""

    name = "files"

    def __init__(self, process: Process) -> None:
        self._threads = {thread.tid: thread for thread in process.threads}
        self._mapped: dict[int, TraceBytes | None] = {}

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        """The trace file mapped, not read: decoding its end touches only the pages of its end."""
        if tid not in self._mapped:
            path = self._threads[tid].trace
            try:
                self._mapped[tid] = map_file(path) if path is not None else None
            except OSError as error:
                raise TraceFileError(f"cannot read trace file {path}: {error.strerror}") from None
        return self._mapped[tid]

    def generation(self, _tid: int) -> int:
        return 0

    def breaks(self, _tid: int) -> tuple[Break, ...]:
        return ()

    def describe(self, tid: int) -> dict:
        thread = self._threads[tid]
        return {"traceFile": str(thread.trace) if thread.trace else None, "traceSize": thread.trace_size}

    def memory_modules(self) -> tuple[MemoryModule, ...]:
        return ()

    def stop(self, _tid: int) -> ThreadStop | None:
        return None  # the bundle says how its threads stopped


class PerCpuSource:
    """Each core's trace cut at its context switches and joined per thread (split once, when opened).

    Splitting when the process is opened makes a damaged switch file fail the load, not a later dump.
    """

    name = "per-cpu files"

    def __init__(self, bundle: Bundle, tids: list[int]) -> None:
        split = per_cpu.split_bundle(bundle, tids)
        self._streams, self._breaks = split.threads, split.breaks

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        """The thread's share of the cpus' traces; empty bytes when it has none but lost some (a gap says so)."""
        stream = self._streams.get(tid)
        return bytes(stream) if stream is not None and (stream.data or self.breaks(tid)) else None

    def generation(self, _tid: int) -> int:
        return 0

    def breaks(self, tid: int) -> tuple[Break, ...]:
        """Where a cpu's trace was lost (a perf.data's), placed in the thread's stream (per_cpu.thread_breaks)."""
        return self._breaks.get(tid, ())

    def describe(self, tid: int) -> dict:
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
            },
            "dataLost": [{"offset": b.offset, "reason": b.reason} for b in self.breaks(tid)],
        }

    def memory_modules(self) -> tuple[MemoryModule, ...]:
        return ()

    def stop(self, _tid: int) -> ThreadStop | None:
        return None  # the bundle says how its threads stopped


class AuxStreamSource:
    """A perf.data recorded per thread: each thread's AUXTRACE buffers joined (perf_data.aux_streams)."""

    name = "perf.data"

    def __init__(self, path: Path, streams: dict[int, AuxStream]) -> None:
        self._path = path
        self._streams = streams  # tid -> AuxStream

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        """The thread's joined buffers; empty bytes when all were lost (its breaks say so, as a gap)."""
        stream = self._streams.get(tid)
        return stream.data if stream is not None and (len(stream) or stream.breaks) else None

    def generation(self, _tid: int) -> int:
        return 0

    def breaks(self, tid: int) -> tuple[Break, ...]:
        stream = self._streams.get(tid)
        return stream.breaks if stream is not None else ()

    def describe(self, tid: int) -> dict:
        stream = self._streams.get(tid)
        return {
            "traceFile": str(self._path),
            "traceSize": len(stream) if stream is not None else 0,
            "auxBuffers": stream.buffers if stream is not None else 0,
            "dataLost": [{"offset": b.offset, "reason": b.reason} for b in stream.breaks] if stream is not None else [],
        }

    def memory_modules(self) -> tuple[MemoryModule, ...]:
        return ()

    def stop(self, _tid: int) -> ThreadStop | None:
        return None
