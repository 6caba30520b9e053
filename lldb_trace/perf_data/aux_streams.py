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
- bytes that AUX records announce (the kernel wrote them into the area) lie
  in no buffer, before the first, between two or after the last; an area
  whose every buffer is missing is an empty stream that is only such a break;
- snapshot mode (``perf record -S``, magic-trace): each buffer is the area's
  content when a snapshot was taken; a snapshot that overlaps the previous one
  continues it (the overlap, checked byte for byte, is dropped), any other
  starts after a stretch of trace nobody saved.  AUX records announce what
  the kernel overwrote as well, so they say nothing about missing data here.

A buffer that repeats bytes already joined (a record written twice) adds
only what it holds past them, when the repeated bytes are the same; when
they differ, the stream breaks and goes on with the buffer's bytes.

A break is where the stream stops continuing: the decoder stops before it and
starts again at the next synchronization point after it, with a gap item, so
no path is ever guessed across lost data.  A per-thread stream without a
single PSB ends with a break that says so: none of it can be decoded.
"""

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from ..libipt.psb import PSB
from ..perf.sideband import PERF_AUX_FLAG_OVERWRITE, PERF_AUX_FLAG_PARTIAL, PERF_AUX_FLAG_TRUNCATED
from .reader import PerfDataError
from .sideband_records import MAX_TASK_ID

_PSB_CHUNK = 1 << 20


@dataclass(frozen=True)
class Break:
    """The stream does not continue at byte ``offset``: ``reason`` says what was lost there."""

    offset: int
    reason: str


@dataclass(frozen=True)
class AuxStream:
    """One AUX area's trace: its bytes (a view into the file when one buffer holds it all) and breaks."""

    key: int  # the tid (per-thread) or cpu (per-cpu) it was recorded for
    data: bytes | memoryview
    breaks: tuple
    buffers: int

    def __len__(self):
        return len(self.data)


def join_streams(recording):
    """``{key: AuxStream}``: per cpu for a per-cpu recording, else per thread."""
    per_cpu = bool(recording.intel_pt.per_cpu_mmaps)
    snapshot = bool(recording.intel_pt.snapshot_mode)
    queues, notices = {}, {}
    for buffer in recording.buffers:
        queues.setdefault(_key(recording, buffer, per_cpu), []).append(buffer)
    for notice in recording.aux:
        key = notice.cpu if per_cpu else notice.tid
        if key is not None and (per_cpu or 0 < key <= MAX_TASK_ID):
            notices.setdefault(key, []).append(notice)
    streams = {}
    for key in sorted(queues.keys() | notices.keys()):
        stream = _join(recording.data, key, queues.get(key, ()), notices.get(key, ()), snapshot)
        if len(stream) or stream.breaks:
            streams[key] = stream if per_cpu else _check_psb(stream)
    return streams


def _key(recording, buffer, per_cpu):
    if per_cpu:
        return buffer.cpu if buffer.cpu is not None else buffer.idx
    if buffer.tid is None or not 0 < buffer.tid <= MAX_TASK_ID:
        raise PerfDataError(
            f"{recording.path}: the AUXTRACE record at byte {buffer.record_offset} names thread "
            f"{-1 if buffer.tid is None else buffer.tid}, in a per-thread recording whose buffers each belong to "
            "a thread: the file is damaged"
        )
    return buffer.tid


def _join(data, key, buffers, notices, snapshot):
    view = memoryview(data)
    pieces, placed, breaks = [], [], []  # placed: (area offset of a piece's first byte, its joined offset, size)
    joined_size = 0  # bytes of the joined stream so far
    stream_end = None  # where the previous buffer ended in the area's stream
    for buffer in buffers if snapshot else sorted(buffers, key=lambda b: b.offset):
        body, start = view[buffer.file_offset : buffer.file_offset + buffer.size], buffer.offset
        if stream_end is not None:
            padding, overlap = _continuation(pieces, placed, stream_end, body, buffer.offset, snapshot)
            if padding is None and snapshot and buffer.offset < stream_end and buffer.end <= stream_end:
                continue  # nothing new since the previous snapshot
            if padding is not None and overlap >= len(body):
                continue  # bytes already joined, written again
            if padding is None:  # a break: the previous buffer's padding (zero bytes, PAD packets) goes
                joined_size -= _strip_padding(pieces, placed)
                breaks.append(Break(joined_size, _between(buffer, stream_end, snapshot)))
            else:  # it continues the stream: drop the previous buffer's padding and the bytes both hold
                joined_size -= _strip_padding(pieces, placed, padding)
                body, start = body[overlap:], buffer.offset + overlap
        pieces.append(body)
        placed.append((start, joined_size, len(body)))
        joined_size += len(body)
        stream_end = buffer.end
    spans = _first_places(placed)
    breaks += _loss_breaks(spans, notices)
    if not snapshot:
        breaks += _missing(spans, buffers, notices, joined_size)
    kept = {}
    for found in breaks:  # one break per offset: the first reason found for it
        if 0 <= found.offset <= joined_size:
            kept.setdefault(found.offset, found)
    joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    return AuxStream(key, joined, tuple(kept[offset] for offset in sorted(kept)), len(buffers))


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


def _continuation(pieces, placed, stream_end, body, offset, snapshot):
    """``(padding, overlap)`` when a buffer at ``offset`` continues the stream, else ``(None, None)``.

    The previous buffer may end in up to 7 bytes of padding; a buffer may repeat bytes already joined
    (checked byte for byte): ``overlap`` of them, all of its own when it brings nothing new.
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
    first = placed[-1][0]
    if not snapshot and first <= offset < stream_end:  # a repeat of the previous buffer's bytes
        overlap = min(stream_end - offset, len(body))
        if bytes(previous[offset - first : offset - first + overlap]) == bytes(body[:overlap]):
            return 0, stream_end - offset
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
    return "the trace data continues from an earlier point (an AUX buffer with other bytes at the same offsets)"


def _first_places(placed):
    """Sorted, disjoint ``(area start, area end, joined offset)``: where each byte of the area first lies joined."""
    spans, reached = [], None
    for first, joined, size in sorted(placed):
        start = first if reached is None else max(first, reached)
        if first + size > start:
            spans.append((start, first + size, joined + start - first))
            reached = first + size
    return spans


def _loss_breaks(spans, notices):
    """Breaks after AUX records flagged TRUNCATED or PARTIAL, placed in the joined stream (a search each)."""
    starts = [start for start, _, _ in spans]
    found = []
    for notice in notices:
        if not notice.flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL):
            continue
        end = notice.offset + notice.size
        k = bisect_left(starts, end) - 1
        if k >= 0 and end <= spans[k][1]:
            what = "the AUX area was full" if notice.flags & PERF_AUX_FLAG_TRUNCATED else "the AUX data is partial"
            advice = "record with a larger AUX area: perf record -m ,SIZE"
            found.append(Break(spans[k][2] + end - spans[k][0], f"trace data lost: {what} ({advice})"))
    return found


def _missing(spans, buffers, notices, joined_size):
    """Breaks where bytes that AUX records announce are in no buffer: before, between or after the buffers."""
    held = _merged((b.offset, b.end) for b in buffers)
    kept = (n for n in notices if not n.flags & PERF_AUX_FLAG_OVERWRITE)
    announced = _merged((n.offset, n.offset + n.size, n.record) for n in kept)
    held_starts = [start for start, _, _ in held]
    starts = [start for start, _, _ in spans]
    found = []
    for start, end, record in announced:
        k = max(bisect_right(held_starts, start) - 1, 0)
        while start < end:  # the stretches of [start, end) that no held range covers
            if k < len(held) and held[k][0] <= start:
                start = max(start, held[k][1])
                k += 1
                continue
            stop = min(end, held[k][0]) if k < len(held) else end
            at = bisect_left(starts, start)
            joined = spans[at][2] if at < len(spans) else joined_size
            reason = (
                f"{stop - start} bytes of trace data announced by the AUX record at byte {record} are in no AUXTRACE "
                "record (perf stopped before saving them, or the file is damaged)"
            )
            found.append(Break(joined, reason))
            start = stop
    return found


def _merged(ranges):
    """Sorted disjoint ``(start, end, tag)`` covering ``ranges`` (``(start, end[, tag])``); a tag is the first's."""
    merged = []
    for start, end, *tag in sorted(ranges):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end), merged[-1][2])
        else:
            merged.append((start, end, tag[0] if tag else None))
    return merged


def _check_psb(stream):
    """``stream``, ending with a break when it holds no PSB: no decoder can start anywhere in it."""
    view = memoryview(stream.data)
    chunks = (bytes(view[k : k + _PSB_CHUNK + len(PSB) - 1]) for k in range(0, len(view), _PSB_CHUNK))
    if not len(view) or any(PSB in chunk for chunk in chunks):
        return stream
    reason = f"the {len(view)} bytes of trace data hold no PSB packet, where decoding starts: none of it can be decoded"
    breaks = (*(b for b in stream.breaks if b.offset < len(view)), Break(len(view), reason))
    return AuxStream(stream.key, stream.data, breaks, stream.buffers)
