"""One history per traced thread, kept between commands.

A history is made on first use and kept while its trace stays the same; a
live trace that grew since (the process ran and stopped again) gets a new
history, at its new end: the present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..traced_thread import TracedThread
from .thread_history import ThreadHistory

if TYPE_CHECKING:
    from ..process_trace import ProcessTrace
    from ..symbolize import Symbolizer


def for_thread(process_trace: ProcessTrace, tid: int, make_symbolizer: Callable[[], Symbolizer]) -> ThreadHistory:
    """The ThreadHistory of ``tid`` in ``process_trace`` (made, or made again after the trace changed).

    Histories are kept per process trace and tid, not per TracedThread (commands make one each time):
    ``make_symbolizer()`` gives a new history's thread its symbolizer, and is called only when one is
    made, since LLDB asks for a thread's history at every stop and a symbolizer is not free to make.
    """
    threads: dict[int, tuple[int, ThreadHistory]] = process_trace.kept.setdefault("histories", {})  # type: ignore[assignment]
    generation = process_trace.source.generation(tid)
    found = threads.get(tid)
    if found is None or found[0] != generation:
        found = threads[tid] = (generation, ThreadHistory(TracedThread(process_trace, tid, make_symbolizer())))
    return found[1]
