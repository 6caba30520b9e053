"""Decoding a trace from its end: the last PSB period first, earlier ones only when more is asked for.

Where a thread stopped and its last instructions are the first answers a user
wants from a large trace, and they lie in its last PSB period.  A TraceTail
finds PSBs backwards from the end of the file (libipt's backward
synchronization, so a gigabyte file is read only where it is decoded) and
decodes back one PSB period, then as much again as it holds each time, each
piece up to where the later one resumes, exactly as the pieces of a parallel
decode are joined (parallel.py).

Until the tail reaches the first PSB, how many instructions precede it is
unknown, so its items are counted from the end: the last is -1.  Once it
reaches the first PSB it is the whole trace, decoded.
"""

import time

from .. import libipt, progress
from ..libipt import LibiptError
from .decoded_thread import DecodedThread
from .parallel import decode_piece, resume_ip


class TraceTail:
    """The decoded end of one thread's ``trace``; ``extend`` decodes earlier PSB periods on demand."""

    def __init__(self, trace, cpu, image, expander, title="Decoding the end of a trace"):
        self._trace, self._cpu, self._image, self._expander = trace, cpu, image, expander
        self._title = title
        self._psbs = _psbs_backward(trace)
        self._parts = []
        self._start = len(trace)  # the trace offset the decoded periods begin at
        self._resume = None  # where decoding resumes at ``_start`` (None: at the end of the file)
        self._seconds = 0.0
        self.complete = False  # the periods reach the first PSB: this is the whole decoded trace
        self.decoded = DecodedThread([])

    @property
    def start_offset(self):
        """The trace offset of the first decoded PSB period."""
        return self._start

    def extend(self, instructions):
        """The DecodedThread of the tail, decoded back until it holds ``instructions`` (or all there are)."""
        if self.decoded.instruction_count >= instructions or self.complete:
            return self.decoded
        started = time.perf_counter()
        with progress.task(self._title, len(self._trace) - self._start) as task:
            while self.decoded.instruction_count < instructions and not self.complete:
                self._decode_earlier_period(task)
                self.decoded = DecodedThread(self._parts, self._seconds + time.perf_counter() - started)
                task.at(len(self._trace) - self._start)
        self._seconds += time.perf_counter() - started
        return self.decoded

    def _decode_earlier_period(self, task):
        """Decode back to an earlier PSB: the last period first, then as much again as is decoded each time.

        Doubling keeps a tail that is pulled back far made of a few parts, not one per PSB.
        """
        reach = self._start - (len(self._trace) - self._start)
        for offset in self._psbs:
            if offset > reach:
                continue
            try:
                ip = resume_ip(self._trace, self._cpu, offset) if offset else None
            except LibiptError:
                continue  # its PSB+ cannot be read: the period before it runs on through it
            self._decode_from(offset, task)
            self._resume = ip
            return
        if self._start:  # bytes before the first PSB (or none readable): a whole decode syncs past them the same way
            self._decode_from(0, task)
        self.complete = True

    def _decode_from(self, offset, task):
        job = (offset, self._start, self._resume)
        within = _Within(task, len(self._trace) - self._start - offset)
        self._parts.insert(0, decode_piece(self._trace, self._cpu, self._image, self._expander, job, within))
        self._start = offset


def _psbs_backward(trace):
    """The offsets of ``trace``'s PSBs, the last first (found by libipt from the end backwards)."""
    if not len(trace):
        return
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        while True:
            try:
                decoder.sync_backward()
            except LibiptError:
                return
            yield decoder.sync_offset


class _Within:
    """A period's decode, which tells trace offsets, told to the tail's task as bytes of the tail decoded."""

    def __init__(self, task, shift):
        self.task, self.shift = task, shift

    def at(self, offset):
        self.task.at(offset + self.shift)
