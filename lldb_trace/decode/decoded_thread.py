"""A thread's decoded trace: blocks in flat arrays, gaps and events in side tables.

Items are numbered the way the user sees them: every instruction and every
gap (decode error) is one item, in trace order.  A block of N instructions is
stored as its first and last address and N, not as N addresses: instruction
addresses are expanded on demand.  Decoding resumes at the next PSB after an
error, as libipt allows, so one bad packet costs one gap, not the rest of the
trace.
"""

import time
from array import array
from dataclasses import dataclass

from .. import libipt
from ..libipt import ErrorCode, EventType, LibiptError, StatusFlag

_DISABLES = (EventType.DISABLED, EventType.ASYNC_DISABLED)


@dataclass(frozen=True)
class Gap:
    """A decode error: item ``index`` stands for the instructions libipt could not reconstruct."""

    index: int
    code: int
    text: str
    offset: int
    last_ip: int | None


@dataclass(frozen=True)
class EventRecord:
    """An event that occurred before item ``index``; ``ip`` is None when libipt suppressed it."""

    index: int
    type: EventType
    ip: int | None


class DecodedThread:
    """The decoded trace of one thread (see the module docstring)."""

    def __init__(self):
        self.block_ips = array("Q")
        self.block_end_ips = array("Q")
        self.block_sizes = array("I")
        self.gaps = []
        self.events = []
        self.item_count = 0
        self.instruction_count = 0
        self.end_ip = None
        self.decode_seconds = 0.0

    @property
    def memory_bytes(self):
        """Bytes held by the decoded storage (arrays plus side-table entries)."""
        arrays = (self.block_ips, self.block_end_ips, self.block_sizes)
        return sum(a.itemsize * len(a) for a in arrays) + 64 * (len(self.gaps) + len(self.events))

    def _add_block(self, block):
        self.block_ips.append(block.ip)
        self.block_end_ips.append(block.end_ip)
        self.block_sizes.append(block.ninsn)
        self.item_count += block.ninsn
        self.instruction_count += block.ninsn
        self.end_ip = block.end_ip

    def _add_gap(self, error, offset, missing_ip=None):
        last_ip = self.block_end_ips[-1] if self.block_end_ips else None
        self.gaps.append(Gap(self.item_count, error.code, error.text, offset, last_ip))
        self.item_count += 1
        if missing_ip:
            self.end_ip = missing_ip  # the thread went on into code the image lacks

    def _add_event(self, event):
        ip = getattr(event, "at", None) if event.type == EventType.ASYNC_DISABLED else getattr(event, "ip", None)
        self.events.append(EventRecord(self.item_count, event.type, ip))
        if event.type in _DISABLES and ip is not None:
            self.end_ip = ip  # tracing stopped here: the thread's pc, not yet executed


def decode_trace(trace, cpu, image):
    """Decode ``trace`` (bytes) of a thread running in ``image`` on ``cpu`` (a libipt.Cpu or None)."""
    decoded = DecodedThread()
    started = time.perf_counter()
    config = libipt.Config(trace, cpu)
    with libipt.BlockDecoder(config, image) as decoder:
        _decode_all(decoder, decoded)
    decoded.decode_seconds = time.perf_counter() - started
    return decoded


def _decode_all(decoder, decoded):
    status = _sync(decoder, decoded)
    while status is not None:
        try:
            while status & StatusFlag.EVENT_PENDING:
                status, event = decoder.event()
                decoded._add_event(event)
            status = decoder.next_raw()
            block = decoder.raw_item
            if block.ninsn:
                decoded._add_block(block)
            if status < 0:
                raise LibiptError(status, "pt_blk_next")
        except LibiptError as error:
            if error.code == ErrorCode.EOS:
                return
            missing_ip = decoder.raw_item.ip if error.code == ErrorCode.NOMAP else None
            decoded._add_gap(error, decoder.offset, missing_ip)
            status = _sync(decoder, decoded)


def _sync(decoder, decoded):
    """Synchronize onto the next PSB; None at the end of the trace.

    libipt searches from after the previous sync point, so every attempt moves
    forward; the offset check only guards against a library that would not.
    """
    failed_at = None
    while True:
        try:
            return decoder.sync_forward()
        except LibiptError as error:
            if error.code == ErrorCode.EOS or decoder.offset == failed_at:
                return None
            failed_at = decoder.offset
            decoded._add_gap(error, failed_at)
