"""What the fuzz campaigns do with each hostile input: open it with the Python API and use every part of it.

:func:`exercise` opens a trace (a perf.data, a JSON bundle) with
``lldb_trace.api.open_bundle`` and, per thread, walks its items both ways,
finds the executions of an address and of ``main``, stands at an item and
reads its stack, walks its calls with subscribers, builds its profile by
function, line and module, then exports every format to a temporary folder.
A user-facing error (LldbTraceError) from one step is an answer too, as
long as it is one line; the step after it still runs, so one refusal does
not hide what the rest would do.  Anything else escapes to the runner
(support.fuzz_runner), which calls it a failure.

:func:`warmed` makes a campaign affordable: mutants name the same
unmutated binaries (libc, ld.so, the programs), and reading libc's symbols
and unwind tables takes seconds.  The parent uses every seed once and keeps
the traces, so that every forked child starts with those tables read.
"""

import os
import tempfile

import lldb_trace.api as pt
from lldb_trace.errors import LldbTraceError
from lldb_trace.export import FORMATS, export
from lldb_trace.profile import GROUPINGS, profile

ITEMS_EACH_WAY = 2000  # enough to cross gaps and parts of the seeds; whole walks are the subscribers' job
FIND_LIMIT = 50


def exercise(path):
    """Use the trace at ``path`` through the API; a summary of what each step gave (LldbTraceError escapes
    only from open_bundle, which is the campaign's one-line "error" outcome)."""
    return use(pt.open_bundle(path))


def use(trace):
    """What :func:`exercise` does with an opened api.Trace."""
    summary = [_thread(thread) for thread in trace.threads]
    with tempfile.TemporaryDirectory() as folder:
        for name in FORMATS:
            summary.append((name, _step(export, trace, name, os.path.join(folder, f"export.{name}"))))
    return summary


def _thread(thread):
    done = {"tid": thread.tid, "items": thread.item_count}
    done["forwards"] = _step(lambda: sum(1 for _ in thread.items(limit=ITEMS_EACH_WAY)))
    done["backwards"] = _step(lambda: sum(1 for _ in thread.items(forwards=False, limit=ITEMS_EACH_WAY)))
    first = _step(lambda: next((item for item in thread.items(limit=64) if item.address is not None), None))
    if getattr(first, "address", None) is not None:
        done["find address"] = _step(lambda: len(thread.find(address=first.address, limit=FIND_LIMIT)))
        done["stack"] = _step(lambda: len(thread.stack_at(first.index)))
        done["goto"] = _step(thread.goto, first.index)
    done["find main"] = _step(lambda: len(thread.find(function="main", limit=FIND_LIMIT)))
    done["walk"] = _step(
        lambda: thread.walk(on_call=_ignore, on_return=_ignore, on_gap=_ignore, functions=["main"]).events
    )
    for by in GROUPINGS:
        done[f"profile {by}"] = _step(lambda by=by: len(profile(thread, by=by).rows))
    return done


def _ignore(_event):
    return None


def _step(function, *args):
    """What ``function(*args)`` returns, or the one-line message of the LldbTraceError it raises."""
    try:
        return function(*args)
    except LldbTraceError as error:
        message = str(error)
        if not message or "\n" in message:
            raise AssertionError(f"{type(error).__name__} is not one line: {message!r}") from error
        return f"error: {message}"


def warmed(paths):
    """Open and use each trace of ``paths``; the Trace objects, for the caller to keep while it forks children.

    Module files are parsed once per process (ElfInfo.read) and their symbols shared while a symbolizer
    holds them: kept alive here, a forked child finds libc's tables read.
    """
    traces = []
    for path in paths:
        trace = pt.open_bundle(path)
        use(trace)
        traces.append(trace)
    return traces
