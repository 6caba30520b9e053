"""One traced process, with its threads decoded lazily and cached.

The LLDB-facing layers hold one ProcessTrace per target; nothing here
imports ``lldb``, so scripts can use it directly.  Its raw bytes come from a
trace source (sources/): a bundle's files, per-cpu files split among the
threads, or a live process's capture backend.  A thread is decoded again only
when its source's generation for it changes.

A large trace is first decoded only at its end (decode/tail.py): where its
thread stopped and its last instructions are answered from there, and the
whole trace is decoded when something needs more (a history, the calls).
Views, analyses and histories take one of its threads as a TracedThread
(traced_thread.py), which asks it for all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import malloc_tuning, progress
from .decode import decode_thread_trace
from .decode.call_forest import CallForest
from .decode.cursor import TraceCursor
from .decode.decoded_thread import DecodedPart, DecodedThread
from .decode.decoder_cpu import decoder_cpu
from .decode.parallel import ForestMaker, decode_piece, piece_jobs
from .decode.process_code import process_code
from .decode.tail import TraceTail
from .decode.workers import worker_count
from .errors import LldbTraceError
from .sources import AuxStreamSource, FileSource, PerCpuSource, TraceBytes, TraceSource

if TYPE_CHECKING:
    from .bundle.model import Bundle, Process, Thread, ThreadStop
    from .decode.expand import BlockExpander
    from .decode.module_bytes import ModuleBytes
    from .libipt import Cpu, Image
    from .symbolize import Symbolizer
    from .symbolize.function_ranges import FunctionRanges

TAIL_FIRST_BYTES = 1 << 20  # a trace this large is decoded from its end first (a whole decode takes a second)


class UnknownThreadError(LldbTraceError):
    """A tid that the trace does not have."""


@dataclass(frozen=True)
class TraceEnd:
    """The decoded end of a thread's trace: the whole decode, or a TraceTail's items counted from the end."""

    decoded: DecodedThread
    from_end: bool  # its item indexes are not the trace's: the trace before them is not decoded yet


class ProcessTrace:
    """``bundle``'s process ``process``: its threads' decoded traces, decoded on first use.

    ``source`` gives the raw bytes (default: the bundle's files, per thread or per cpu).  A thread
    whose trace has at least ``tail_first_bytes`` (default TAIL_FIRST_BYTES) is decoded from its end first.
    """

    def __init__(
        self,
        bundle: Bundle,
        process: Process,
        source: TraceSource | None = None,
        workers: int | None = None,
        tail_first_bytes: int | None = None,
    ) -> None:
        self.bundle = bundle
        self.process = process
        self.source: TraceSource = source or _bundle_source(bundle, process, self.tids)
        self.workers = worker_count(workers)
        self.tail_first_bytes = TAIL_FIRST_BYTES if tail_first_bytes is None else tail_first_bytes
        malloc_tuning.return_freed_memory()  # decoded arrays of tens of MB come and go
        self.code = process_code(process.modules)  # shared with the processes that load the same modules
        self.module_bytes: ModuleBytes = self.code.module_bytes
        self.expander: BlockExpander = self.code.expander
        self._decoded: dict[int, DecodedThread] = {}
        self._tails: dict[int, TraceTail] = {}
        self._forests: dict[int, CallForest] = {}
        self._generations: dict[int, int] = {}
        # what the layers above keep per trace (its threads' histories, its values), living as long as it does:
        # a cache keyed by the trace elsewhere, holding the trace in its values, would keep every trace forever
        self.kept: dict[str, object] = {}

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def tids(self) -> list[int]:
        return [thread.tid for thread in self.process.threads]

    @property
    def stopped_tid(self) -> int | None:
        """The thread to show first, as live LLDB selects one: the one a signal stopped (a crash), else the main one."""
        signalled = [thread.tid for thread in self.process.threads if thread.stop and thread.stop.signal is not None]
        if signalled:
            return signalled[0]
        return self.pid if self.pid in self.tids else (self.tids[0] if self.tids else None)

    def thread(self, tid: int) -> Thread:
        for thread in self.process.threads:
            if thread.tid == tid:
                return thread
        known = ", ".join(map(str, self.tids))
        raise UnknownThreadError(f"process {self.pid} has no traced thread {tid} (its threads: {known})")

    @property
    def cpu(self) -> Cpu | None:
        """The libipt Cpu for errata, or None when the bundle's CPU is unknown."""
        return decoder_cpu(self.bundle.cpu)

    def thread_stop(self, tid: int) -> ThreadStop | None:
        """How the thread stopped (a bundle ThreadStop: a signal, an exit), or None when nobody recorded it."""
        return self.source.stop(tid) or self.thread(tid).stop

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        """The raw trace of ``tid`` (for per-cpu bundles, its pieces of every cpu's trace); None if it has none."""
        self.thread(tid)
        return self.source.trace_bytes(tid)

    @property
    def functions(self) -> FunctionRanges:
        """Where the modules' functions begin and end (their unwind tables), for the call forest and history."""
        return self.code.functions

    def forest_if_built(self, tid: int) -> CallForest | None:
        """The CallForest of ``tid`` if it was already built (info commands must not build it)."""
        return self._forests.get(tid)

    def decoded(self, tid: int, for_forest: bool = False) -> DecodedThread | None:
        """The DecodedThread of ``tid``, or None when the thread has no trace.

        ``for_forest``: the call forest is wanted next, so a decode in pieces builds each piece's forest too.
        """
        self._forget_if_changed(tid)
        if tid not in self._decoded:
            trace = self.trace_bytes(tid)
            if trace is None:
                return None
            self._decode_whole(tid, trace, for_forest)
        return self._decoded[tid]

    def _decode_whole(self, tid: int, trace: TraceBytes, for_forest: bool = False) -> DecodedThread:
        title = f"Decoding the trace of thread {tid}"
        breaks = self.source.breaks(tid)
        forest = self._forest_maker() if for_forest else None
        decoded = decode_thread_trace(trace, self.cpu, self.image, self.expander, self.workers, title, breaks, forest)
        self._name_missing_code(decoded)
        self._decoded[tid] = decoded
        self._tails.pop(tid, None)
        return decoded

    def piece_jobs(self, tid: int, pieces: int) -> list[tuple[int, int, int | None]] | None:
        """``tid``'s trace cut at PSBs into at most ``pieces`` jobs that decoded_piece decodes anywhere (on other
        machines: lldb-trace's batch commands); None when it must be decoded whole here (no trace, or breaks)."""
        trace = self.trace_bytes(tid)
        if trace is None or self.source.breaks(tid):
            return None
        return piece_jobs(trace, self.cpu, pieces)

    def decoded_piece(self, tid: int, job: tuple[int, int, int | None], for_forest: bool = False) -> DecodedPart:
        """One of piece_jobs' pieces, decoded in this process (``for_forest``: with its call forest, to be joined)."""
        trace = self.trace_bytes(tid)
        assert trace is not None, "piece_jobs gave no jobs for a thread without a trace"
        forest = self._forest_maker() if for_forest else None
        return decode_piece(trace, self.cpu, self.image, self.expander, job, forest=forest)

    def _forest_maker(self) -> ForestMaker:
        return ForestMaker(self.functions, self.code.plt or None)

    def adopt_pieces(self, tid: int, parts: list[DecodedPart], seconds: float) -> DecodedThread:
        """Take ``tid``'s decode as the decoded_piece parts of all its piece_jobs, in order (the same as decoded's)."""
        decoded = DecodedThread(parts, seconds)
        self._name_missing_code(decoded)
        self._decoded[tid] = decoded
        self._tails.pop(tid, None)
        return decoded

    def _name_missing_code(self, decoded: DecodedThread) -> None:
        """Gaps in the code of a module whose binary was not found (a perf.data's) say which module it is."""
        missing = self.process.missing_modules
        if not missing:
            return

        def name_of(ip: int) -> str | None:
            for module in missing:
                if module.start <= ip < module.end:
                    return f"no binary for {module.system_path} (code at {ip:#x}): load with --search-path DIR"
            return None

        for part in decoded.parts:
            part.name_missing_code(name_of)

    def _forget_if_changed(self, tid: int) -> None:
        """Drop what was decoded of ``tid`` if its source changed since (a live process ran)."""
        generation = self.source.generation(tid)
        if self._generations.get(tid) != generation:
            self._decoded.pop(tid, None)
            self._tails.pop(tid, None)
            self._forests.pop(tid, None)
            self._generations[tid] = generation

    @property
    def image(self) -> Image:
        """The libipt image of the process's modules (made on first use)."""
        return self.code.image

    def has_trace(self, tid: int) -> bool:
        return self.trace_bytes(tid) is not None

    def end_of(self, tid: int, instructions: int) -> TraceEnd | None:
        """A TraceEnd of ``tid`` with at least its last ``instructions`` (all, if fewer); None without a trace.

        A trace smaller than ``tail_first_bytes``, already decoded, or with data lost inside, is decoded whole.
        """
        trace = self.trace_bytes(tid)
        if trace is None:
            return None
        self._forget_if_changed(tid)
        if tid in self._decoded or len(trace) < self.tail_first_bytes or self.source.breaks(tid):
            return TraceEnd(self._decoded[tid] if tid in self._decoded else self._decode_whole(tid, trace), False)
        tail = self._tails.get(tid)
        if tail is None:
            title = f"Decoding the end of the trace of thread {tid}"
            tail = self._tails[tid] = TraceTail(trace, self.cpu, self.image, self.expander, title)
        decoded = tail.extend(instructions)
        self._name_missing_code(decoded)
        if tail.complete:  # the whole trace: its indexes are the trace's
            self._decoded[tid] = decoded
            del self._tails[tid]
        return TraceEnd(decoded, not tail.complete)

    def tail_if_done(self, tid: int) -> TraceTail | None:
        """The TraceTail of ``tid`` while only its end is decoded (info commands must not decode), else None."""
        if self._generations.get(tid) != self.source.generation(tid):
            return None
        return self._tails.get(tid)

    def prepare(self, tid: int) -> None:
        """What a loaded target shows first: a small trace decoded with its call forest, a large one's end."""
        end = self.end_of(tid, 1)
        if end is not None and not end.from_end and end.decoded.instruction_count:
            self.call_forest(tid)

    def decoded_if_done(self, tid: int) -> DecodedThread | None:
        """The DecodedThread of ``tid`` if it was already decoded, and its source has not changed since.

        Info commands must not decode; the debugger shows a thread's history only once it is decoded.
        """
        if self._generations.get(tid) != self.source.generation(tid):
            return None
        return self._decoded.get(tid)

    def end_ip(self, tid: int) -> int | None:
        """Where the thread's trace ends: the pc it is shown stopped at (None without instructions)."""
        end = self.end_of(tid, 1)
        return end.decoded.end_ip if end else None

    def cursor(self, tid: int, forwards: bool = False, symbolizer: Symbolizer | None = None) -> TraceCursor:
        """A TraceCursor over ``tid``'s items, at the newest one (the oldest with ``forwards``).

        Its items answer ``location`` (symbol, line, disassembly) through ``symbolizer`` when one is given.
        """
        decoded = self.decoded(tid)
        if decoded is None:
            raise LldbTraceError(f"thread {tid} has no trace of its own")
        return TraceCursor(decoded, self.expander, forwards, symbolizer)

    def call_forest(self, tid: int) -> CallForest:
        """The CallForest of ``tid`` (built on first use, kept)."""
        if tid not in self._forests:
            decoded = self.decoded(tid, for_forest=True)
            if decoded is None:
                raise LldbTraceError(f"thread {tid} has no trace of its own")
            with progress.task(f"Building the call tree of thread {tid}", decoded.item_count) as task:
                self._forests[tid] = CallForest(decoded, self.expander, self.functions, self.code.plt, task=task)
        return self._forests[tid]


def _bundle_source(bundle: Bundle, process: Process, tids: list[int]) -> TraceSource:
    """Where a bundle's traces are: per-cpu files (or a perf.data's cpus), a perf.data's threads, or files."""
    if bundle.cpus:
        return PerCpuSource(bundle, tids)
    if bundle.thread_streams is not None:
        return AuxStreamSource(bundle.path, bundle.thread_streams)
    return FileSource(process)
