"""Watchpoints on a loaded trace: the bytes to watch, and where in a thread's history they were written.

LLDB refuses ``watchpoint set`` on a ScriptedProcess ("watchpoints are not
supported"), so the plugin keeps a trace target's watchpoints itself
(commands/history_watchpoints.py routes LLDB's ``watchpoint`` commands here)
and ``pt continue``/``pt reverse-continue`` stop at them: right after the
instruction that wrote the bytes (frame #0 at the instruction after the store,
as GDB and rr stop), with the old and new values where they are known.  A
write whose address is not known at its position is no stop: it may not have
touched the bytes, and stopping at every unknown store would stop everywhere.
One whose area is known but not which bytes of it it wrote (a masked store
whose mask is not known, a string instruction whose direction is not) stops,
saying so: going past it would stop at an older write than the last.
"""

from dataclasses import dataclass

import numpy as np

from ..values.process_values import values_of
from ..views.accesses import clipped


@dataclass
class HistoryWatchpoint:
    """One watchpoint: ``kind`` is "write", "read", "read_write" or "modify" (a write that changes the value)."""

    id: int
    address: int
    size: int
    kind: str
    spec: str  # what the user watched: a variable path or an expression
    declared: str | None = None  # where the variable is declared, as LLDB says it
    enabled: bool = True
    hit_count: int = 0


_lists: dict = {}  # target id -> [HistoryWatchpoint]
_last_ids: dict = {}  # target id -> the last id given: ids are not reused after a delete, as LLDB's are not
# kept by each trace (ProcessTrace.kept), so that they go with it: "watchpoint stops", (tid, position) -> the
# stop's (watchpoint id, description lines), which a live trace's views share; "watchpoint answers", (target id,
# tid) -> (the recovery, the watchpoints, stop_positions' answer) last asked
_ACCESSES = {"read_write": ("read", "write"), "read": ("read",)}  # a watchpoint's kind -> what stops it
_LLDB_TYPES = (("rw", "read_write"), ("r", "read"), ("w", "write"), ("m", "modify"))  # as LLDB describes them


def watchpoints(target):
    return _lists.setdefault(target.GetProcess().GetUniqueID(), [])


def add(target, address, size, kind, spec, declared=None):
    key = target.GetProcess().GetUniqueID()
    _last_ids[key] = _last_ids.get(key, 0) + 1
    watchpoint = HistoryWatchpoint(_last_ids[key], address, size, kind, spec, declared)
    watchpoints(target).append(watchpoint)
    return watchpoint


def live_watchpoints(live):
    """The enabled watchpoints LLDB holds for the live target ``live`` (SBTarget), as HistoryWatchpoints: a
    history view of it stops at them as at its own."""
    found = []
    for index in range(live.GetNumWatchpoints()):
        watchpoint = live.GetWatchpointAtIndex(index)
        if not watchpoint.IsValid() or not watchpoint.IsEnabled():
            continue
        described = lldb_description(watchpoint)
        kind = next((kind for short, kind in _LLDB_TYPES if f"type = {short}" in described), "write")
        spec = watchpoint.GetWatchSpec() or f"0x{watchpoint.GetWatchAddress():x}"
        found.append(
            HistoryWatchpoint(watchpoint.GetID(), watchpoint.GetWatchAddress(), watchpoint.GetWatchSize(), kind, spec)
        )
    return found


def lldb_description(watchpoint):
    import lldb  # the LLDB-facing part: this module's other functions work without a debugger

    stream = lldb.SBStream()
    watchpoint.GetDescription(stream, lldb.eDescriptionLevelBrief)
    return stream.GetData() or ""


def stop_positions(target, trace, tid, live=None):
    """``(sorted positions, {position: (watchpoint, Access)})``: where the enabled watchpoints stop thread ``tid``
    (the position after each access they watch), those of ``live``, the live target a history view shows,
    included.  Every movement asks, a step included: the answer is kept while the watchpoints and the thread's
    recovery are the same."""
    enabled = [w for w in watchpoints(target) if w.enabled] + (live_watchpoints(live) if live is not None else [])
    values = values_of(trace).thread(tid) if enabled else None
    if values is None:
        return np.zeros(0, dtype=np.int64), {}
    key, watched = (target.GetProcess().GetUniqueID(), tid), tuple((w.id, w.address, w.size, w.kind) for w in enabled)
    answers = trace.kept.setdefault("watchpoint answers", {})
    kept = answers.get(key)
    if kept is not None and kept[0] is values and kept[1] == watched:
        return kept[2]
    stops = {}
    for watchpoint in enabled:
        for whole in values.accesses(watchpoint.address, watchpoint.size, _ACCESSES.get(watchpoint.kind, ("write",))):
            if whole.address is None:
                continue  # it may have written anywhere (the module doc)
            access = clipped(whole, watchpoint.address, watchpoint.size)
            if watchpoint.kind == "modify" and access.old is not None and access.old == access.new:
                continue
            stops.setdefault(access.position + 1, (watchpoint, access))
    found = np.array(sorted(stops), dtype=np.int64), stops
    answers[key] = (values, watched, found)
    return found


def note_stop(trace, tid, position, watchpoint, access):
    """Remember that thread ``tid`` stands at ``position`` because of ``watchpoint``; the report's lines."""
    watchpoint.hit_count += 1
    values = values_of(trace).thread(tid)
    before = _value(*values.memory_at(position - 1, watchpoint.address, watchpoint.size))
    after = _value(*values.memory_at(position, watchpoint.address, watchpoint.size))
    lines = [f"Watchpoint {watchpoint.id} hit:", f"old value: {before}", f"new value: {after}"]
    if access.kind == "read":
        lines = [f"Watchpoint {watchpoint.id} hit (read):", f"value: {before}"]
    changed = "<unknown>" not in (before, after) and before != after  # then it did write them
    if not access.exact and not changed:
        done = "written" if access.kind == "write" else "read"
        lines.append(f"(the instruction may have {done} them: only the area it reaches is known)")
    _stops(trace)[(tid, position)] = (watchpoint.id, lines)
    return lines


def forget_stops(trace, tid):
    """Thread ``tid`` moves: where it stood for a watchpoint is no longer where it stands."""
    stops = _stops(trace)
    for stop in [stop for stop in stops if stop[0] == tid]:
        del stops[stop]


def stop_at(trace, tid, position):
    """``(watchpoint id, lines)`` when thread ``tid`` of ``trace`` stopped at ``position`` for a watchpoint, else
    None."""
    return _stops(trace).get((tid, position))


def _stops(trace):
    return trace.kept.setdefault("watchpoint stops", {})


def _value(data, mask):
    """Little-endian bytes as LLDB shows a watched value; "<unknown>" unless every byte is known."""
    if mask.count(0xFF) != len(data):
        return "<unknown>"
    return f"0x{int.from_bytes(data, 'little'):0{2 * len(data)}x}" if len(data) <= 8 else data.hex()
