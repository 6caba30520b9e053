"""Which ProcessTrace belongs to which LLDB target.

Kept in its own module because ``command script import lldb_trace`` re-runs
the package's top level: state stored there would be lost on a re-import.

A trace can be given an expiry (``expire_when``): a check run each time the
trace is looked up, which drops it once it no longer describes the target
(a live trace after ``pt stop``, once the process ran on untraced).  Why it
was dropped is kept, so commands can say so instead of "no trace".
"""

import itertools

_traces = {}  # key -> [SBTarget, ProcessTrace, expiry or None]
_dropped = []  # (SBTarget, why its trace was dropped)
_keys = itertools.count(1)


def add(target, process_trace):
    """Remember ``process_trace`` for ``target`` (replacing any earlier one); returns the key its process is given."""
    for key in [key for key, (candidate, _trace, _expiry) in _traces.items() if candidate == target]:
        remove(key)
    _dropped[:] = [(candidate, why) for candidate, why in _dropped if candidate != target]
    key = f"trace-{next(_keys)}"
    _traces[key] = [target, process_trace, None]
    return key


def expire_when(key, expiry):
    """From now on, ``expiry()`` is asked at every lookup: a reason (a str) drops the trace, None keeps it."""
    _traces[key][2] = expiry


def by_key(key):
    return _traces[key][1]


def for_target(target):
    """The ProcessTrace of ``target``, or None when the target has no trace (see :func:`why_dropped`)."""
    for key, (candidate, process_trace, expiry) in list(_traces.items()):
        if candidate == target:
            reason = expiry() if expiry else None
            if reason is None:
                return process_trace
            remove(key)
            _dropped.append((target, reason))
    return None


def why_dropped(target):
    """Why ``target``'s trace was dropped (the expiry's reason), or None if it never had one dropped."""
    return next((why for candidate, why in reversed(_dropped) if candidate == target), None)


def remove(key):
    _traces.pop(key, None)
