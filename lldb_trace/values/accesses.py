""" "Who wrote this?": the instructions that wrote (or read) some bytes, asked the same way by the API and
``pt find --write/--read``."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from ..errors import LldbTraceError

if TYPE_CHECKING:
    from .recovery import Access, ThreadValues


MAX_SIZE = 1 << 20  # bytes one question may cover


class AccessQueryError(LldbTraceError):
    """A write/read search asked wrongly."""


def accesses(values: ThreadValues, write: int | None, read: int | None, size: int, limit: int | None) -> list[Access]:
    """The accesses of ``size`` bytes at ``write`` (writes) or ``read`` (reads), newest first, at most ``limit``."""
    if (write is None) == (read is None):
        raise AccessQueryError("give one address: write=ADDRESS or read=ADDRESS")
    address, size = checked_span(write if write is not None else read, size)
    if limit is not None and (_integer(limit) is None or limit < 1):
        raise AccessQueryError(f"limit {limit!r}: give how many accesses to list (1 or more), or None for all")
    found = values.accesses(address, size, ("write",) if write is not None else ("read",))
    return found[:limit] if limit else found


def checked_span(address: object, size: object) -> tuple[int, int]:
    """``(address, size)`` as ints (a numpy integer is one), or AccessQueryError saying what is wrong with them."""
    start, length = _integer(address), _integer(size)
    if start is None or not 0 <= start < 1 << 64:
        raise AccessQueryError(f"an address is a 64-bit unsigned int, not {address!r}")
    if length is None or not 0 < length <= MAX_SIZE:
        raise AccessQueryError(f"size {size!r}: give a number of bytes from 1 to {MAX_SIZE}")
    if start + length > 1 << 64:
        raise AccessQueryError(f"{length} bytes at {start:#x} run past the end of the address space")
    return start, length


def _integer(value: object) -> int | None:
    """``value`` as an int where it is an integer (not a bool, a float or a string), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[call-overload]
    except TypeError:
        return None


def in_shared_mapping(values: ThreadValues, address: int, size: int) -> bool:
    """Whether any of the bytes lies in a shared mapping (shared_mappings.py): writes there by other processes, or
    through another mapping of the same memory, are in no trace of this thread."""
    return any(low < address + size and address < high for low, high in values.volatile)


def window_accesses(values: ThreadValues, address: int, size: int, kinds=("write",)) -> list[Access]:
    """ThreadValues.accesses: the accesses each window solved lays out, and the writes the kernel made that the
    known states record (a system call's buffers, a signal's frame: at the instruction the call is, or after
    which the signal came), newest first; an access whose area is only bounded (with that area), or a write at an
    unknown address (with none), as one that may have touched the bytes."""
    from .recovery import CHUNK, Access

    found = []
    for number in reversed(range(values.chunks)):
        chunk, low = values._solved(number), number * CHUNK
        by_instruction = {}
        for i, k, kind, where, length in chunk.known_accesses:
            if where < address + size and address < where + length:
                by_instruction.setdefault(i, []).append((k, kind, where, length, not chunk.spans_exactly(i, k)))
        for i, where, data in _kernel_writes(values, low, low + chunk.n, address, size):
            by_instruction.setdefault(i, []).append((data, "w", where, len(data), False))
        for i in reversed(range(chunk.n)):
            for k, kind, where, length, may in by_instruction.get(i, ()):
                name = "write" if kind == "w" else "read"
                if may and name in kinds and i not in chunk.unknown_writes:  # an area only bounded: which bytes
                    old = _bytes(chunk, i, where, length)  # of it (a masked store's), or how far, is not known
                    new = _bytes(chunk, i + 1, where, length) if kind == "w" else old
                    found.append(Access(low + i, name, where, length, old, new, False))
                elif name in kinds and not may:
                    old = _bytes(chunk, i, where, length)
                    new = _bytes(chunk, i + 1, where, length) if kind == "w" else old
                    if isinstance(k, bytes):  # the kernel's: what it wrote
                        new = k
                    elif new is None and kind == "w" and chunk.facts.get((i, k)) is not None:  # a shared mapping's
                        new = chunk.facts[(i, k)].to_bytes(length, "little")
                    found.append(Access(low + i, name, where, length, old, new, True))
            if i in chunk.unknown_writes and "write" in kinds:
                found.append(Access(low + i, "write", None, 0, None, None, False))
    return found


def _kernel_writes(values, low, high, address, size):
    """``(window position, address, bytes)`` of the recorded kernel writes in positions low..high-1 that touch the
    asked bytes, cut to them."""
    for position, result in values.syscalls.items():
        at = position - 1 if result.before else position  # a frame: written after the instruction before it
        if not low <= at < high:
            continue
        for start, data in result.memory:
            first, last = max(start, address), min(start + len(data), address + size)
            if first < last:
                yield at - low, first, bytes(data[first - start : last - start])


def _bytes(chunk, state, address, size):
    values = [chunk.memory_byte(state, address + offset) for offset in range(size)]
    return None if None in values else bytes(values)
