"""The scripting API: a bundle's threads as streams of items, what each item is, and their call forests.

Works from plain Python (no LLDB needed) and from LLDB's ``script``::

    import lldb_trace.api as pt
    trace = pt.open_bundle("test_traces/crash/trace.json")   # or pt.of_target(lldb.target) inside LLDB
    print(trace)                                             # <Trace ...: process 5707 (threads 5707)>
    thread = trace.thread(5707)
    for item in thread.items(forwards=False, limit=5):      # newest first
        print(item)                                          # <Item 2714 0x401137 crash`descend at crash.c:8: ...>
    item = thread.item(0)
    item.events                                              # events before the first item
    item.function, item.symbol, item.module                  # 'crash`main', 'main', 'crash'
    item.file, item.line, item.source, item.disassembly      # '/…/crash.c', 12, 'crash.c:12', 'pushq %rbp'
    thread.locate(0x401126)                                  # the same Location for any address
    for call in thread.call_forest().calls():                # execution order, parents before children
        print(call, thread.locate(call.address).function_label)
    thread.walk(on_call=lambda e: print(e.index, e.depth, e.function), functions=["descend"])  # subscribers

Items are numbered from 0 (oldest) to ``item_count - 1``; an item is an
instruction or a gap (a decode error); events and timestamps hang off the
item they precede.  Decoding happens on first use of a thread and is cached.
What an address is comes from LLDB inside LLDB (``of_target``) and from the
module files' ELF symbols and DWARF line tables outside it (``open_bundle``):
the two give the same answers.  A call through a PLT stub is the library
function it reached (``call.address``); ``call.stub`` is the stub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import history, subscribe
from .decode.workers import worker_count
from .errors import LldbTraceError
from .history import queries
from .process_trace import ProcessTrace, UnknownThreadError
from .symbolize import ElfSymbolizer, Symbolizer
from .trace_files import load_trace
from .traced_thread import TracedThread
from .values.accesses import accesses, checked_span
from .values.core_match import thread_end
from .values.machine_state import TRACKED
from .values.process_values import values_of

if TYPE_CHECKING:
    from .analysis import ItemRange
    from .bundle.model import Bundle
    from .decode.cursor import Item
    from .history import Frame, Match, ThreadHistory
    from .perf_data import BinarySearch
    from .subscribe import Event, WalkSummary
    from .symbolize import Location
    from .values.recovery import Access, ThreadValues

    Callback = Callable[[Event], Any] | None


class TargetWithoutTraceError(LldbTraceError):
    """``of_target`` was given no target, or one that has no trace."""


class Trace:
    """A loaded bundle (or a traced LLDB target): its processes, and their threads by tid."""

    def __init__(self, bundle: Bundle, process_traces: list[ProcessTrace], symbolizers: Sequence[Symbolizer]) -> None:
        self.bundle = bundle
        self.processes = process_traces
        self._symbolizers = symbolizers  # one per process, in the same order

    def thread(self, tid: int) -> ThreadTrace:
        for process_trace, symbolizer in zip(self.processes, self._symbolizers, strict=True):
            if tid in process_trace.tids:
                return ThreadTrace(process_trace, tid, symbolizer)
        known = ", ".join(str(t) for p in self.processes for t in p.tids)
        raise UnknownThreadError(f"the trace has no thread {tid} (its threads: {known})")

    @property
    def threads(self) -> list[ThreadTrace]:
        return [
            ThreadTrace(process_trace, tid, symbolizer)
            for process_trace, symbolizer in zip(self.processes, self._symbolizers, strict=True)
            for tid in process_trace.tids
        ]

    def __repr__(self) -> str:
        processes = "; ".join(f"process {p.pid} (threads {', '.join(map(str, p.tids))})" for p in self.processes)
        return f"<Trace {self.bundle.path} ({self.bundle.format}): {processes or 'no processes'}>"


class ThreadTrace(TracedThread):
    """One thread's decoded trace, read through cursors; ``locate`` says what an address is.

    A TracedThread (``decoded``, ``item_count``, ``cursor()``, ``call_forest()``...) with the scripting
    methods: items, time travel, find and subscribers.
    """

    def items(self, start: int | None = None, forwards: bool = True, limit: int | None = None) -> Iterator[Item]:
        """Items from ``start`` (default: the oldest, or the newest going backwards) in one direction."""
        cursor = self.cursor(forwards)
        if start is not None and not cursor.seek(start):
            return iter(())
        return cursor.items(limit)

    def item(self, index: int) -> Item:
        """The item at ``index`` (negative counts from the end)."""
        cursor = self.cursor()
        if not cursor.seek(index):
            raise IndexError(f"item {index} is out of range (the trace has {self.item_count} items)")
        return cursor.item()

    def locate(self, address: int | None) -> Location | None:
        """The Location of ``address``: module, function, file, line and disassembly (None for None)."""
        return None if address is None else self.symbolizer.locate(address)

    # -- time travel (lldb_trace.history) ------------------------------------------------------------

    @property
    def history(self) -> ThreadHistory:
        """The thread's ThreadHistory: its position and the movements (step, next, finish... both ways)."""
        return history.for_thread(self.process_trace, self.tid, lambda: self.symbolizer)

    @property
    def position(self) -> int:
        """Where the thread stands in its history: an item index, or ``item_count`` (where it stopped)."""
        return self.history.position

    def goto(self, index: int) -> int:
        """Stand at item ``index`` (``item_count``: where the thread stopped; negative: counted back from there, -1
        the last item); a gap or out of range raises."""
        return self.history.goto(self.history.resolve(index)).position

    def stack_at(self, index: int | None = None) -> list[Frame]:
        """The frames at item ``index`` (default: the position), innermost first: history.Frame(pc, row, ...);
        an outer frame's pc is its call instruction, as ``bt`` shows it (``locate(pc).source`` is the calling
        line), and ``resumes_at`` the return address."""
        history_ = self.history
        return history_.frames_at(history_.position if index is None else history_.resolve(index))

    def find(
        self,
        function: str | None = None,
        line: tuple[str, int] | None = None,
        address: int | None = None,
        limit: int | None = None,
        write: int | None = None,
        read: int | None = None,
        size: int = 1,
    ) -> list[Match] | list[Access]:
        """Executions newest first (history.Match): calls of ``function`` (a name or a glob; a call through a PLT
        stub counts for the stub's name and the function it reached, at that function's first instruction),
        executions of ``line`` (``(file, line)``) or of the instruction at ``address``; exactly one of them.
        With ``write`` (or ``read``) an address: the instructions that wrote (read) any of its ``size`` bytes,
        newest first, as values.Access (old and new bytes where known; ``exact`` False: it may have)."""
        if write is not None or read is not None:
            if (function, line, address) != (None, None, None):
                raise queries.FindError("find takes write= or read= alone, without function, line or address")
            return accesses(self.values(), write, read, size, limit)
        if isinstance(line, str):  # "FILE:LINE", as pt find --line takes it
            file, _, number = line.rpartition(":")
            if not file or not number.isdigit():
                raise queries.FindError(f"line {line!r}: give (FILE, LINE) or 'FILE:LINE', e.g. 'main.c:42'")
            line = (file, int(number))
        return queries.find(self.history, self.symbolizer, function, line, address, limit)

    # -- values (lldb_trace.values) --------------------------------------------------------------------

    def values(self) -> ThreadValues:
        """The thread's value recovery (from the bundle's core files and the trace), made on first use."""
        known = values_of(self.process_trace)
        found = known.thread(self.tid)
        if found is not None:
            return found
        if known.has_known_state(self.tid):
            raise LldbTraceError(f"thread {self.tid} has no instruction in the trace: it has no values to recover")
        if known.end_core is not None:
            raise LldbTraceError(
                f"thread {self.tid} is not in {known.end_core.path} (it ended before the core was taken), and no other"
                " known state holds it: its values cannot be recovered"
            )
        raise LldbTraceError(
            f"thread {self.tid} has no known state to recover values from: give the trace its core where it ends"
            " (the bundle's coreFile, or open_bundle(..., core=CORE))"
        )

    def registers_at(self, index: int | None = None) -> dict[str, int | None]:
        """The registers at item ``index`` (default: the position; ``item_count``: where the thread stopped),
        before its instruction runs: name -> value, None where the trace and the known states do not tell (all
        but the pc without a known state)."""
        position = self.history.resolve(self.position if index is None else index)
        if not values_of(self.process_trace).has_known_state(self.tid):
            return {**dict.fromkeys(TRACKED), "rip": self._pc_at(position)}
        found = self.values().registers_at(position)
        if found["rip"] is None:  # before the positions a long trace's recovery covers, or the end without a core
            found["rip"] = self._pc_at(position)
        return found

    def _pc_at(self, position: int) -> int | None:
        return self.history.pc_at(position) if position < self.item_count else self._stands_at()

    def _stands_at(self) -> int | None:
        """Where the thread stands at its end, where something says so: its recorded stop (a fault's pc), or where
        tracing stopped if that is not its last instruction.  After an exit's system call the kernel's return
        address is no address the trace gives."""
        stop = self.process_trace.thread_stop(self.tid)
        if stop is not None and stop.pc is not None:
            return stop.pc
        end = thread_end(self.process_trace, self.tid)
        return end.stands if end is not None else None

    def read_memory_at(self, index: int | None, address: int, size: int) -> tuple[bytes, bytes]:
        """``(data, mask)``: ``size`` bytes at ``address`` at item ``index`` (None: the position); ``mask`` is
        0xff for each byte known there, 0 for each unknown one (its data byte is 0).  Without a known state
        only the modules' code and read-only data are known."""
        position = self.history.resolve(self.position if index is None else index)
        address, size = checked_span(address, size)
        if not values_of(self.process_trace).has_known_state(self.tid):
            data = self.module_bytes.read_unchanging(address, size)
            return data + bytes(size - len(data)), b"\xff" * len(data) + bytes(size - len(data))
        return self.values().memory_at(position, address, size)

    # -- subscribers (lldb_trace.subscribe) -------------------------------------------------------------

    def walk(
        self,
        on_call: Callback = None,
        on_return: Callback = None,
        on_gap: Callback = None,
        on_instruction: Callback = None,
        functions: str | Iterable[str] | None = None,
        modules: str | Iterable[str] | None = None,
        range: str | tuple[int, int] | ItemRange | None = None,
    ) -> WalkSummary:
        """Call the callbacks with each subscribe.Event of the history, in trace order; a WalkSummary.

        ``functions`` (``fib``, ``module`fib``, globs) and ``modules`` (file names, globs) filter the calls,
        returns and instructions before any Python runs; ``range`` is ``FROM:TO`` or ``(first, last)``.
        A callback returning ``False`` (or raising subscribe.StopWalk) ends the walk.
        """
        callbacks = {"call": on_call, "return": on_return, "gap": on_gap, "instruction": on_instruction}
        return subscribe.walk(self, callbacks, functions, modules, range)

    def __repr__(self) -> str:
        where = f"<ThreadTrace tid {self.tid} of process {self.pid}"
        decoded = self.decoded_if_done()
        if decoded is None:
            return f"{where}: not decoded yet>"
        errors = f"{decoded.error_count} error" + ("" if decoded.error_count == 1 else "s")
        return f"{where}: {decoded.item_count} items, {decoded.instruction_count} instructions, {errors}>"


def open_bundle(
    path: str | Path,
    disassembly_flavor: str = "att",
    binaries: BinarySearch | None = None,
    core: str | Path | None = None,
    workers: int | str | None = None,
) -> Trace:
    """Load a bundle (file or folder) or a perf.data outside LLDB; errors are one-line LldbTraceErrors.

    Addresses are described from the modules' ELF and DWARF, disassembly in
    ``disassembly_flavor`` ("att" or "intel"); ``binaries`` (a perf_data.BinarySearch)
    says where else a perf.data's binaries may be; ``core`` is a core file of a traced
    process where its trace ends (it replaces a bundle's ``coreFile``), checked against the trace; ``workers``
    is how many processes decode a large trace (default: ``LLDB_TRACE_WORKERS``, else every core).
    """
    count = worker_count(workers)  # a bad count is refused before anything is loaded
    bundle = load_trace(path, binaries, core)
    processes = [ProcessTrace(bundle, process, workers=count) for process in bundle.processes]
    symbolizers = [ElfSymbolizer(p.process.modules, p.module_bytes, disassembly_flavor) for p in processes]
    return Trace(bundle, processes, symbolizers)


def of_target(target: Any) -> Trace:
    """The Trace behind an LLDB target that ``trace load`` made or ``pt start`` traces (inside LLDB's ``script``)."""
    from .debugger import registry
    from .debugger.symbolizer import LldbSymbolizer, disassembly_flavor

    if target is None or not hasattr(target, "IsValid"):
        raise TargetWithoutTraceError(
            f"of_target needs an LLDB target, not {type(target).__name__}: in LLDB's script, pass lldb.target"
        )
    if not target.IsValid():
        raise TargetWithoutTraceError("of_target: no target is selected: load a trace first with 'trace load BUNDLE'")
    process_trace = registry.for_target(target)
    if process_trace is None:
        name = target.GetExecutable().GetFilename() or "the target"
        raise TargetWithoutTraceError(
            f"{name} has no trace: load one with 'trace load BUNDLE', or trace the process with 'pt start'"
        )
    symbolizer = LldbSymbolizer(target, process_trace.module_bytes, disassembly_flavor(target.GetDebugger()))
    return Trace(process_trace.bundle, [process_trace], [symbolizer])
