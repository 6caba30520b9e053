"""Reading a circular AUX buffer in overwrite ("snapshot") mode, oldest byte first.

The only mode-specific step is finding the oldest byte.  In snapshot mode the
Intel PT driver reports ``aux_head`` as the write offset inside the buffer,
not as a running byte count, so the offset alone cannot tell whether the
buffer has wrapped.  The kernel hands out AUX pages zeroed, so
:func:`snapshot_head` treats any non-zero byte at or after the offset as
proof of a wrap.  If the buffer wrapped and that region is still all zeros,
the only bytes lost are zero bytes, which are Intel PT PAD packets, so the
trace decodes the same.  A head already at or past the buffer size is taken
as a running count.
"""


def snapshot_head(ring, raw_head):
    """``raw_head`` (the kernel's ``aux_head``) as a running byte count that :func:`snapshot_bytes` accepts.

    A head at or past ``len(ring)`` already is one.  A smaller head is an
    offset into the buffer: the buffer has wrapped when any byte from it to
    the end is non-zero (the kernel zeroes AUX pages when it allocates them).
    """
    if raw_head < 0:
        raise ValueError(f"aux_head {raw_head} is negative")
    ring = ring if isinstance(ring, bytes | bytearray) else bytes(memoryview(ring).cast("B"))
    size = len(ring)
    if size == 0 or raw_head >= size:
        return raw_head
    wrapped = ring.count(0, raw_head) != size - raw_head
    return raw_head + size if wrapped else raw_head


def snapshot_bytes(ring, head):
    """The trace held by a circular buffer ``ring`` whose writer has written ``head`` bytes in all, oldest first.

    Before the first wrap (``head < len(ring)``) that is ``ring[:head]``.
    After it, the oldest byte is at ``head % len(ring)``, and the result is
    the whole ring rotated to start there.
    """
    if head < 0:
        raise ValueError(f"head {head} is negative")
    view = ring if isinstance(ring, bytes | bytearray) else memoryview(ring).cast("B")
    size = len(view)
    if size == 0 or head == 0:
        return b""
    if head < size:
        return bytes(view[:head])
    start = head % size
    return bytes(view[start:]) + bytes(view[:start])
