"""What the stepping walks ask of the call forest at a position: whose frame it is, and how frames relate.

A frame is a forest row.  The end of history belongs to the frame the thread
stopped in (None when it stopped at the door of a callee, before its first
instruction ran).
"""

import numpy as np

from ..decode.forest_builder import LEFT_NON_LOCALLY, SWITCHED, TAIL_CALL


def row_at(history, position):
    """The forest row of the frame at ``position`` (None: the end, stopped at a callee's first instruction)."""
    return history.end_row() if position == history.end else history.map.frame_row(position)


def inside(frames, row, frame):
    """Is ``row`` a call made (directly or not) by ``frame``?"""
    if frame is None or frame < 0 or row < 0 or row <= frame:
        return False
    forest = frames.forest
    return int(forest.first[row]) <= int(forest.last[frame])


def call_item(history, row):
    """The item of the instruction that made call ``row``: its call, or (a handler, a switched frame) the one
    before it."""
    call = history.map.forest.call_item(row)
    return call if call is not None else max(0, int(history.map.forest.first[row]) - 1)


def left_non_locally(frames, row):
    """Did frame ``row`` end by a jump past its return (longjmp, a caught exception), not by returning?"""
    return bool(frames.forest.flags[row] & LEFT_NON_LOCALLY)


def switched(frames, row):
    """Does frame ``row`` run on a stack a context switch went to (its callers are another stack's)?"""
    return row >= 0 and bool(frames.forest.flags[row] & SWITCHED)


def return_address(history, row):
    """Where call ``row`` returns to: after its call instruction (None if that is unknown)."""
    address = history.map.address(call_item(history, row))
    return address + history.map.instruction_size(address) if address is not None else None


def resumption(history, row):
    """The switched frame that goes on with the caller of ``row``, a call that switched context
    (swapcontext) and was switched back to later: the first one starting at its return address."""
    forest = history.map.forest
    later = np.flatnonzero((forest.flags[row + 1 :] & SWITCHED) != 0) + row + 1
    wanted = return_address(history, row)
    for candidate in later.tolist():
        if history.map.address(int(forest.first[candidate])) == wanted:
            return candidate
    return None


def resumed_call(history, row):
    """The call that switched context away, whose caller switched frame ``row`` goes on with (or None)."""
    forest = history.map.forest
    start = history.map.address(int(forest.first[row]))
    for candidate in reversed(np.flatnonzero((forest.flags[:row] & LEFT_NON_LOCALLY) != 0).tolist()):
        if forest.call_item(candidate) is not None and return_address(history, candidate) == start:
            return candidate
    return None


def replacement(history, row):
    """The frame that replaced ``row`` by a tail call, going on to ``row``'s return address (or None)."""
    forest = history.map.forest
    following = int(forest.last[row]) + 1
    if following >= history.end:
        return None
    successor = history.map.frame_row(following)
    same_call = forest.parent[successor] == forest.parent[row] and forest.first[successor] == following
    return successor if same_call and forest.flags[successor] & TAIL_CALL else None


def own_items(history, row, start):
    """``(index, address)`` of ``row``'s own items from ``start`` on, its callees skipped."""
    frames = history.map
    last = int(frames.forest.last[row])
    firsts, lasts, _ = frames.children(row)
    index = start
    k = 0
    while index <= last:
        while k < len(firsts) and lasts[k] < index:
            k += 1
        if k < len(firsts) and firsts[k] <= index:
            index = lasts[k] + 1
            continue
        stop = firsts[k] if k < len(firsts) else last + 1
        while index < stop:
            address = frames.address(index)
            if address is None:
                return
            yield index, address
            index += 1
