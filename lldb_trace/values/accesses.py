""" "Who wrote this?": the instructions that wrote (or read) some bytes, asked the same way by the API and
``pt find --write/--read``."""

from __future__ import annotations

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
    address = write if write is not None else read
    if not isinstance(address, int) or isinstance(address, bool) or not 0 <= address < 1 << 64:
        raise AccessQueryError(f"an address is a 64-bit unsigned int, not {address!r}")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_SIZE:
        raise AccessQueryError(f"size {size!r}: give a number of bytes from 1 to {MAX_SIZE}")
    if address + size > 1 << 64:
        raise AccessQueryError(f"{size} bytes at {address:#x} run past the end of the address space")
    found = values.accesses(address, size, ("write",) if write is not None else ("read",))
    return found[:limit] if limit else found


def in_shared_mapping(values: ThreadValues, address: int, size: int) -> bool:
    """Whether any of the bytes lies in a shared mapping (shared_mappings.py): writes there by other processes, or
    through another mapping of the same memory, are in no trace of this thread."""
    return any(low < address + size and address < high for low, high in values.volatile)
