"""One history per traced thread, kept between commands.

A history is made on first use and kept while its trace stays the same; a
live trace that grew since (the process ran and stopped again) gets a new
history, at its new end: the present.
"""

import weakref

from .thread_history import ThreadHistory

_histories = weakref.WeakKeyDictionary()  # ProcessTrace -> {tid: (generation, ThreadHistory)}


def for_thread(process_trace, tid, make_symbolizer):
    """The ThreadHistory of ``tid`` in ``process_trace`` (made, or made again after the trace changed).

    ``make_symbolizer()`` gives the new history its symbolizer; it is called only when one is made,
    since LLDB asks for a thread's history at every stop and a symbolizer is not free to make.
    """
    threads = _histories.setdefault(process_trace, {})
    generation = process_trace.source.generation(tid)
    found = threads.get(tid)
    if found is None or found[0] != generation:
        found = threads[tid] = (generation, ThreadHistory(process_trace, tid, make_symbolizer()))
    return found[1]


def forget(process_trace):
    """Drop the histories of a trace (its target went away)."""
    _histories.pop(process_trace, None)
