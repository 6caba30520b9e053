"""Which ProcessTrace belongs to which LLDB target.

Kept in its own module because ``command script import lldb_trace`` re-runs
the package's top level: state stored there would be lost on a re-import.
"""

import itertools

_traces = {}  # key -> (SBTarget, ProcessTrace)
_keys = itertools.count(1)


def add(target, process_trace):
    """Remember ``process_trace`` for ``target``; returns the key its ScriptedProcess is given."""
    key = f"trace-{next(_keys)}"
    _traces[key] = (target, process_trace)
    return key


def by_key(key):
    return _traces[key][1]


def for_target(target):
    """The ProcessTrace of ``target``, or None when the target has no trace."""
    for candidate, process_trace in _traces.values():
        if candidate == target:
            return process_trace
    return None


def remove(key):
    _traces.pop(key, None)
