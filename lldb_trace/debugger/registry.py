"""Which trace (and which live session) belongs to which LLDB target: the one registry of traced targets.

Kept in its own module because ``command script import lldb_trace`` re-runs
the package's top level: state stored there would be lost on a re-import.

Each registration has a key (given to the target's ScriptedProcess and to recording
plans), the target, its ProcessTrace and, while ``pt start`` records, its live
session.  ``pt stop`` ends the session but keeps the trace with an expiry: a
check run at each lookup, which drops the trace once it no longer describes
the target (the process ran on untraced).  Why it was dropped is kept, so
commands can say so instead of "no trace".
"""

import itertools
from dataclasses import dataclass


@dataclass
class _Registration:
    target: object  # SBTarget
    trace: object  # ProcessTrace
    session: object = None  # the LiveSession recording it, if one is
    expiry: object = None  # () -> why the trace is stale, or None
    recorded_by: object = None  # the LiveSession that recorded it, recording or stopped


_registrations = {}  # key -> _Registration
_dropped = []  # (SBTarget, why its trace was dropped)
_keys = itertools.count(1)


def _forget_deleted_targets():
    """Drop the registrations of targets LLDB deleted (``target delete``): their traces hold files open (a
    perf.data's mapping) and memory, and a long session loads many."""
    deleted = [key for key, registration in _registrations.items() if not registration.target.IsValid()]
    traces = [_registrations[key].trace for key in deleted]
    for key in deleted:
        remove(key)
    _dropped[:] = [(target, why) for target, why in _dropped if target.IsValid()]
    kept = {id(registration.trace) for registration in _registrations.values()}
    for trace in traces:  # what the layers above keep of a trace refers to it: let go now, not at a collection
        if id(trace) not in kept:
            trace.kept.clear()


def add(target, process_trace, session=None):
    """Register ``process_trace`` (and its live ``session``) for ``target``, replacing any earlier one; the new key."""
    _forget_deleted_targets()
    for key in [key for key, registration in _registrations.items() if registration.target == target]:
        remove(key)
    _dropped[:] = [(candidate, why) for candidate, why in _dropped if candidate != target]
    key = f"trace-{next(_keys)}"
    _registrations[key] = _Registration(target, process_trace, session, recorded_by=session)
    return key


def end_session(key, expiry):
    """The session stops recording; its trace stays until ``expiry()`` (asked at every lookup) gives a reason."""
    registration = _registrations[key]
    registration.session, registration.expiry = None, expiry


def recorder_for(target):
    """The live session that recorded ``target``'s trace, recording still or stopped while the process has not
    run on (its trace still describes it: the process stands where the trace ends), or None."""
    if for_target(target) is None:
        return None
    found = (r.recorded_by for r in _registrations.values() if r.target == target and r.recorded_by)
    return next(found, None)


def by_key(key):
    return _registrations[key].trace


def session(key):
    return _registrations[key].session


def session_for(target):
    """The live session recording ``target``, or None."""
    found = (r.session for r in _registrations.values() if r.target == target and r.session)
    return next(found, None)


def for_target(target):
    """The ProcessTrace of ``target``, or None when the target has no trace (see :func:`why_dropped`)."""
    for key, registration in list(_registrations.items()):
        if registration.target == target:
            reason = registration.expiry() if registration.expiry else None
            if reason is None:
                return registration.trace
            remove(key)
            _dropped.append((target, reason))
    return None


def why_dropped(target):
    """Why ``target``'s trace was dropped (the expiry's reason), or None if it never had one dropped."""
    return next((why for candidate, why in reversed(_dropped) if candidate == target), None)


def remove(key):
    _registrations.pop(key, None)
