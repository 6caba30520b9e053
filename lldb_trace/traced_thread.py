"""One traced thread as one object: what views, analyses, exports, walks and histories ask of a thread.

They used to take ``(process_trace, tid, symbolizer)`` and ask the ProcessTrace
again and again for the thread's decode, its call forest, the bundle's time
conversion and the process's code; a TracedThread answers all of it.  Making
one decodes nothing: the ProcessTrace decodes on first use and caches (a large
trace's end first, see ``end_of``), so a TracedThread is made wherever a
command or the API names a thread.  ``api.ThreadTrace`` is a TracedThread with
the scripting methods added, so the API and the LLDB commands pass the same
thing.  No ``lldb`` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import LldbTraceError

if TYPE_CHECKING:
    from .bundle.model import Bundle, Thread, ThreadStop, TscConversion
    from .decode.call_forest import CallForest
    from .decode.cursor import TraceCursor
    from .decode.decoded_thread import DecodedThread
    from .decode.expand import BlockExpander
    from .decode.module_bytes import ModuleBytes
    from .decode.tail import TraceTail
    from .process_trace import ProcessTrace, TraceEnd
    from .symbolize import Symbolizer
    from .symbolize.function_ranges import FunctionRanges


class TracedThread:
    """Thread ``tid`` of ``process_trace``, whose addresses ``symbolizer`` describes."""

    def __init__(self, process_trace: ProcessTrace, tid: int, symbolizer: Symbolizer) -> None:
        self.process_trace = process_trace
        self.tid = tid
        self.symbolizer = symbolizer

    @property
    def pid(self) -> int:
        return self.process_trace.pid

    @property
    def bundle(self) -> Bundle:
        return self.process_trace.bundle

    @property
    def bundle_thread(self) -> Thread:
        """The bundle's word on the thread: its trace file, how it stopped."""
        return self.process_trace.thread(self.tid)

    @property
    def has_trace(self) -> bool:
        return self.process_trace.has_trace(self.tid)

    @property
    def decoded(self) -> DecodedThread | None:
        """The DecodedThread (counts, gaps, events, timestamps), decoded on first use; None without a trace."""
        return self.process_trace.decoded(self.tid)

    @property
    def item_count(self) -> int:
        decoded = self.decoded
        return decoded.item_count if decoded is not None else 0

    def decoded_if_done(self) -> DecodedThread | None:
        """The DecodedThread if it is decoded already (info and repr must not decode), else None."""
        return self.process_trace.decoded_if_done(self.tid)

    def tail_if_done(self) -> TraceTail | None:
        """The decoded end of a large trace while only its end is decoded, else None."""
        return self.process_trace.tail_if_done(self.tid)

    def end_of(self, instructions: int) -> TraceEnd | None:
        """The trace's end with at least its last ``instructions``, decoding only that end of a large trace."""
        return self.process_trace.end_of(self.tid, instructions)

    def decoded_or_error(self) -> DecodedThread:
        """The DecodedThread; an LldbTraceError when the thread has no trace."""
        decoded = self.decoded
        if decoded is None:
            raise LldbTraceError(f"thread {self.tid} has no trace of its own")
        return decoded

    def call_forest(self) -> CallForest:
        """The CallForest (built on first use, kept)."""
        return self.process_trace.call_forest(self.tid)

    def cursor(self, forwards: bool = False) -> TraceCursor:
        """A TraceCursor at the newest item (the oldest with ``forwards``), its items located by the symbolizer."""
        return self.process_trace.cursor(self.tid, forwards, self.symbolizer)

    @property
    def stop(self) -> ThreadStop | None:
        """How the thread stopped (a signal, an exit), or None when nobody recorded it."""
        return self.process_trace.thread_stop(self.tid)

    @property
    def stop_pc(self) -> int | None:
        """Where the thread stands at the end: its recorded stop's pc, else its pc in the core taken there (an
        exit's core stands after its ``syscall``, where the trace ends), else where its trace ends."""
        stop = self.stop
        if stop is not None and stop.pc is not None:
            return stop.pc
        from .values.process_values import values_of  # the value layer: not loaded by views and exports that never ask

        core = values_of(self.process_trace).end_core
        in_core = core.thread(self.tid) if core is not None else None
        return in_core.registers["rip"] if in_core is not None else self.decoded_or_error().end_ip

    def describe_source(self) -> dict:
        """Where the thread's bytes come from, as the session info shows it (a file, per-cpu pieces, live)."""
        return self.process_trace.source.describe(self.tid)

    @property
    def tsc_conversion(self) -> TscConversion | None:
        """TSC to wall-clock ns (analysis.ThreadTimes); None: times stay in TSC ticks."""
        return self.process_trace.bundle.tsc_conversion

    @property
    def module_bytes(self) -> ModuleBytes:
        """The process's code, read at run-time addresses."""
        return self.process_trace.module_bytes

    @property
    def expander(self) -> BlockExpander:
        """Turns the decode's blocks into instructions."""
        return self.process_trace.expander

    @property
    def functions(self) -> FunctionRanges:
        """Where the modules' functions begin and end (their unwind tables)."""
        return self.process_trace.functions
