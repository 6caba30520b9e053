"""Joining a perf.data's AUXTRACE buffers into one trace stream per AUX area, with its breaks.

perf copies each AUX area (one per thread with ``--per-thread``, else one per
cpu) into AUXTRACE records as the kernel fills it; a buffer's ``offset`` is
where its bytes lie in that area's stream.  Joined in stream order, the
buffers give the area's trace, except where it is not continuous:

- the kernel flagged an AUX record TRUNCATED (the area was full and tracing
  stopped until perf caught up) or PARTIAL: what was traced meanwhile is lost,
  after that record's data;
- a buffer starts past the previous one's end: bytes between were never
  saved (perf pads each buffer to 8 bytes with PAD packets and counts them
  in its size, so a buffer may also start up to 7 zero bytes before the
  previous one's end: it continues it);
- snapshot mode (``perf record -S``, magic-trace): each buffer is the area's
  content when a snapshot was taken; a snapshot that overlaps the previous one
  continues it (the overlap, checked byte for byte, is dropped), any other
  starts after a stretch of trace nobody saved.

A break is where the stream stops continuing: the decoder stops before it and
starts again at the next synchronization point after it, with a gap item, so
no path is ever guessed across lost data.
"""

from dataclasses import dataclass

from ..perf.sideband import PERF_AUX_FLAG_PARTIAL, PERF_AUX_FLAG_TRUNCATED


@dataclass(frozen=True)
class Break:
    """The stream does not continue at byte ``offset``: ``reason`` says what was lost there."""

    offset: int
    reason: str


@dataclass(frozen=True)
class AuxStream:
    """One AUX area's trace: its bytes (a view into the file when one buffer holds it all) and breaks."""

    key: int  # the tid (per-thread) or cpu (per-cpu) it was recorded for
    data: object
    breaks: tuple
    buffers: int

    def __len__(self):
        return len(self.data)


def join_streams(recording):
    """``{key: AuxStream}``: per cpu for a per-cpu recording, else per thread."""
    per_cpu = bool(recording.intel_pt.per_cpu_mmaps)
    snapshot = bool(recording.intel_pt.snapshot_mode)
    queues = {}
    for buffer in recording.buffers:
        key = buffer.cpu if per_cpu else buffer.tid
        if key is None:
            key = buffer.idx
        queues.setdefault(key, []).append(buffer)
    losses = {}
    for cpu, tid, aux_offset, aux_size, flags in recording.aux:
        if flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL):
            key = cpu if per_cpu else tid
            losses.setdefault(key, []).append((aux_offset + aux_size, flags))
    return {key: _join(recording.data, key, buffers, losses.get(key, ()), snapshot) for key, buffers in queues.items()}


def _join(data, key, buffers, losses, snapshot):
    view = memoryview(data)
    pieces, placed, breaks = [], [], []  # placed: (area offset of a piece's first byte, its joined offset, size)
    position = 0  # bytes of the joined stream so far
    stream_end = None  # where the previous buffer ended in the area's stream
    for buffer in buffers if snapshot else sorted(buffers, key=lambda b: b.offset):
        body, start = view[buffer.file_offset : buffer.file_offset + buffer.size], buffer.offset
        if stream_end is not None:
            padding, overlap = _continuation(pieces, stream_end, body, buffer.offset, snapshot)
            if padding is None and snapshot and buffer.offset < stream_end and buffer.end <= stream_end:
                continue  # nothing new since the previous snapshot
            if padding is None:  # a break: the previous buffer's padding (zero bytes, PAD packets) goes
                position -= _strip_padding(pieces, placed)
                breaks.append(Break(position, _between(buffer, stream_end, snapshot)))
            else:  # it continues the stream: drop the previous buffer's padding and the bytes both hold
                position -= _strip_padding(pieces, placed, padding)
                body, start = body[overlap:], buffer.offset + overlap
        pieces.append(body)
        placed.append((start, position, len(body)))
        position += len(body)
        stream_end = buffer.end
    breaks += _loss_breaks(placed, losses)
    breaks = sorted({b.offset: b for b in breaks if 0 < b.offset < position}.values(), key=lambda b: b.offset)
    joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    return AuxStream(key, joined, tuple(breaks), len(buffers))


def _strip_padding(pieces, placed, count=None):
    """Drop ``count`` (default: all, up to 7) trailing zero bytes of the last piece; returns how many."""
    previous = pieces[-1]
    if count is None:
        count = 0
        while count < min(7, len(previous)) and not previous[len(previous) - 1 - count]:
            count += 1
    if count:
        pieces[-1] = previous[:-count]
        first, joined, size = placed[-1]
        placed[-1] = (first, joined, size - count)
    return count


def _continuation(pieces, stream_end, body, offset, snapshot):
    """``(padding, overlap)`` when a buffer at ``offset`` continues the stream, else ``(None, None)``.

    The previous buffer may end in up to 7 bytes of padding; a snapshot may repeat bytes already joined
    (checked byte for byte).
    """
    previous = pieces[-1]
    zeros = 0
    while zeros < min(7, len(previous)) and not previous[len(previous) - 1 - zeros]:
        zeros += 1
    for padding in range(zeros + 1):  # how much of the previous buffer's end is padding is not recorded
        end = stream_end - padding
        if offset == end:
            return padding, 0
        overlap = end - offset
        if snapshot and 0 < overlap < len(body) and _same(pieces, body[:overlap], padding):
            return padding, overlap
    return None, None


def _same(pieces, head, padding=0):
    """Whether the joined stream so far, less its last ``padding`` bytes, ends with ``head``'s bytes."""
    size = len(head) + padding
    tail = bytearray()
    for piece in reversed(pieces):
        tail[:0] = piece[-(size - len(tail)) :] if size - len(tail) < len(piece) else piece
        if len(tail) >= size:
            break
    return bytes(tail[-size : len(tail) - padding]) == bytes(head)


def _between(buffer, stream_end, snapshot):
    if snapshot:
        return "trace data between two snapshots (perf record -S) was not saved"
    missing = buffer.offset - stream_end
    if missing > 0:
        return f"{missing} bytes of trace data were not saved by perf"
    return "the trace data continues from an earlier point (a repeated AUX buffer)"


def _loss_breaks(placed, losses):
    """Breaks after AUX records flagged TRUNCATED or PARTIAL, placed in the joined stream."""
    found = []
    for end, flags in losses:
        for first, joined, size in placed:
            if first < end <= first + size:
                what = "the AUX area was full" if flags & PERF_AUX_FLAG_TRUNCATED else "the AUX data is partial"
                advice = "record with a larger AUX area: perf record -m ,SIZE"
                found.append(Break(joined + end - first, f"trace data lost: {what} ({advice})"))
    return found
