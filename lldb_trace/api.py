"""The scripting API: a bundle's threads as streams of items, and their call forests.

Works from plain Python (no LLDB needed) and from LLDB's ``script``::

    import lldb_trace.api as pt
    trace = pt.open_bundle("test_traces/crash/trace.json")    # or pt.of_target(lldb.target)
    thread = trace.thread(5707)
    for item in thread.items(forwards=False, limit=5):       # newest first
        print(item.index, item.kind, hex(item.address) if item.address else item.gap.text)
    thread.item(0).events                                     # events before the first item
    for call in thread.call_forest().calls(): ...             # Call(first, last, depth, address, children)

Items are numbered from 0 (oldest) to ``item_count - 1``; an item is an
instruction or a gap (a decode error); events and timestamps hang off the
item they precede.  Decoding happens on first use of a thread and is cached.
"""

from .bundle.loader import load_bundle
from .process_trace import ProcessTrace, UnknownThreadError


class Trace:
    """A loaded bundle: its processes, and their threads by tid."""

    def __init__(self, bundle, process_traces):
        self.bundle = bundle
        self.processes = process_traces

    def thread(self, tid):
        for process_trace in self.processes:
            if tid in process_trace.tids:
                return ThreadTrace(process_trace, tid)
        known = ", ".join(str(t) for p in self.processes for t in p.tids)
        raise UnknownThreadError(f"the trace has no thread {tid} (its threads: {known})")

    @property
    def threads(self):
        return [ThreadTrace(p, tid) for p in self.processes for tid in p.tids]


class ThreadTrace:
    """One thread's decoded trace, read through cursors."""

    def __init__(self, process_trace, tid):
        self.process_trace = process_trace
        self.tid = tid

    @property
    def decoded(self):
        """The DecodedThread (counts, gaps, events, memory); decodes on first use."""
        return self.process_trace.decoded(self.tid)

    @property
    def item_count(self):
        return self.decoded.item_count if self.decoded else 0

    def cursor(self, forwards=False):
        """A TraceCursor at the newest item (the oldest with ``forwards``); seek() moves it anywhere."""
        return self.process_trace.cursor(self.tid, forwards)

    def items(self, start=None, forwards=True, limit=None):
        """Items from ``start`` (default: the oldest, or the newest going backwards) in one direction."""
        cursor = self.cursor(forwards)
        if start is not None and not cursor.seek(start):
            return iter(())
        return cursor.items(limit)

    def item(self, index):
        """The item at ``index`` (negative counts from the end)."""
        cursor = self.cursor()
        if not cursor.seek(index):
            raise IndexError(f"item {index} is out of range (the trace has {self.item_count} items)")
        return cursor.item()

    def call_forest(self):
        return self.process_trace.call_forest(self.tid)


def open_bundle(path):
    """Load a bundle (file or folder) outside LLDB; errors are one-line LldbTraceErrors."""
    bundle = load_bundle(path)
    return Trace(bundle, [ProcessTrace(bundle, process) for process in bundle.processes])


def of_target(target):
    """The Trace behind an LLDB target made by ``trace load`` (inside LLDB's ``script``), or None."""
    from .target import registry

    process_trace = registry.for_target(target)
    return Trace(process_trace.bundle, [process_trace]) if process_trace else None
