"""A thread's decoded trace in compact storage: blocks by id, with side tables.

Items are numbered the way the user sees them: every instruction and every
gap (decode error) is one item, in trace order.  libipt's blocks end at every
conditional or indirect branch, so a block is fully described by its first
address and instruction count, and a program runs the same few thousand
blocks over and over.  Each distinct block is stored once in a table (a gap
is a table row of its own, with no instructions); the trace itself is a
sequence of block ids (the block sequence), 2 bytes each while there are
fewer than 65,535 rows, 4 beyond.  A checkpoint every 64 ordinals (an ordinal
is a place in the block sequence; the checkpoint holds the item index where
that ordinal's block starts) makes seeking by item index a binary search plus
a short walk.  Instruction
addresses are expanded from blocks on demand (see expand.py).

Events (enable/disable, overflow, exec mode, interrupts, paging...) and
timestamps live in side tables keyed by the index of the item they precede.
"""

from array import array
from bisect import bisect_right
from dataclasses import dataclass, replace
from functools import cached_property

from ..libipt import EventType, InsnClass
from . import part_ends
from .gap_table import Gap, GapTable

CHECKPOINT_SPACING = 64
NO_IP = (1 << 64) - 1  # an event whose ip libipt suppressed
# The block-ending branches the call forest follows (far transfers enter no traced function).
FOLLOWED_CLASSES = frozenset((InsnClass.CALL, InsnClass.RETURN, InsnClass.JUMP))


@dataclass(frozen=True)
class EventRecord:
    """An event that happened before item ``index``; ``ip`` is None when libipt suppressed it."""

    index: int
    type: EventType
    ip: int | None


class DecodedPart:
    """A stretch of one thread's decoded trace, with item indices counted from its own start.

    A thread decoded in one go is one part; a large trace decoded in parallel
    is one part per stretch between chosen PSBs (see parallel.py).
    """

    def __init__(self, trace_offset=0):
        self.trace_offset = trace_offset  # where this part's bytes start in the thread's whole trace
        self.block_ips = array("Q")  # per row: the block's first address (a gap's number)
        self.block_sizes = array("H")  # per row: the block's instruction count (0: a gap)
        self._block_ids = None  # ip << 16 | size -> row, made when the Python loop adds blocks (see _row_ids)
        self.row_classes = array("B")  # per row: InsnClass of its last instruction if FOLLOWED_CLASSES has it, else 0
        self.block_sequence = array("H")  # the trace: one row number per block or gap, in the order they ran
        self.checkpoints = array("Q")  # item index of ordinal k * CHECKPOINT_SPACING
        self.gaps = GapTable()
        self.event_items = array("Q")
        self.event_types = array("B")
        self.event_ips = array("Q")
        self.tsc_items = array("Q")  # item index from which tsc_values[k] holds
        self.tsc_values = array("Q")
        self.item_count = 0
        self.instruction_count = 0
        self.end_ip = None
        self.last_instruction = None  # the last instruction's address
        self.truncation = None  # a truncation.Cut when the trace file ends inside a packet
        self.decode_loop = None  # which loop decoded the blocks: "compiled" (block_loop.c) or "python"
        self.piece_forest = None  # its call forest, built where it was decoded (piece_forest.py), until joined

    # -- size -------------------------------------------------------------------------

    @property
    def storage_bytes(self):
        """Bytes held by the decoded storage: every array plus the gap records."""
        tables = (
            self.block_ips, self.block_sizes, self.row_classes, self.block_sequence, self.checkpoints,
            self.event_items, self.event_types, self.event_ips, self.tsc_items, self.tsc_values,
        )  # fmt: skip
        return sum(t.itemsize * len(t) for t in tables) + self.gaps.storage_bytes

    @property
    def error_count(self):
        return len(self.gaps)

    @property
    def event_count(self):
        return len(self.event_items)

    @property
    def has_timestamps(self):
        return bool(self.tsc_values)

    # -- building (decode_loop.py calls these) ------------------------------------------

    def add_raw_blocks(self, raw):
        """Append libipt ``pt_block`` structs (48 bytes each, back to back); empty blocks are skipped."""
        words = array("Q", raw)  # a bytes-like initializer is read with frombytes: no copy through bytes()
        halves = array("H", raw)
        ids = self._row_ids()
        get = ids.get
        sequence_append, checkpoints_append = self.block_sequence.append, self.checkpoints.append
        items = self.item_count
        ordinal = len(self.block_sequence)
        last_end = None
        for ip, end_ip, size, iclass in zip(words[0::6], words[1::6], halves[14::24], halves[12::24], strict=False):
            if not size:
                continue
            key = ip << 16 | size
            block = get(key)
            if block is None:
                block = ids[key] = self._new_row(ip, size, iclass)
                sequence_append = self.block_sequence.append  # the row may have widened the sequence
            if not ordinal % CHECKPOINT_SPACING:
                checkpoints_append(items)
            sequence_append(block)
            ordinal += 1
            items += size
            last_end = end_ip
        self._reached(items, last_end)

    def add_rows_and_blocks(self, rows, sequence, checkpoints, items, last_end):
        """Append what one call of the compiled loop decoded (compiled_loop.py), as numpy arrays.

        ``rows`` are the new rows' ``(ips, sizes, classes)``, ``sequence`` the blocks' rows (uint32), then the
        new checkpoints, the item count reached and the last block's ``end_ip`` (None: no block).
        """
        for column, new in zip((self.block_ips, self.block_sizes, self.row_classes), rows, strict=True):
            column.frombytes(memoryview(new).cast("B"))  # frombytes takes numpy's memory as plain bytes only
        self._fit_sequence()
        self.block_sequence.frombytes(memoryview(sequence.astype(self.block_sequence.typecode)).cast("B"))
        self.checkpoints.frombytes(memoryview(checkpoints).cast("B"))
        self._reached(items, last_end)

    def _reached(self, items, last_end):
        """Blocks were added up to item count ``items``; ``last_end``: the last one's last instruction (or None)."""
        self.instruction_count += items - self.item_count
        self.item_count = items
        if last_end is not None:
            self.end_ip = self.last_instruction = last_end

    def _row_ids(self):
        """The rows of blocks by ``ip << 16 | size``, made from the table the first time (a gap's row has none)."""
        if self._block_ids is None:
            rows = zip(self.block_ips, self.block_sizes, strict=True)
            self._block_ids = {ip << 16 | size: row for row, (ip, size) in enumerate(rows) if size}
        return self._block_ids

    def _new_row(self, ip, size, iclass):
        row = len(self.block_ips)
        self.block_ips.append(ip)
        self.block_sizes.append(size)
        self.row_classes.append(iclass if iclass in FOLLOWED_CLASSES else 0)
        self._fit_sequence()
        return row

    def _fit_sequence(self):
        if len(self.block_ips) > 0xFFFF and self.block_sequence.typecode == "H":
            self.block_sequence = array("I", self.block_sequence)  # more rows than 2-byte ids can name

    def add_gap(self, code, text, offset, missing_ip=None):
        if not len(self.block_sequence) % CHECKPOINT_SPACING:
            self.checkpoints.append(self.item_count)
        self.block_sequence.append(self._new_row(len(self.gaps), 0, 0))
        where = self.trace_offset + offset
        self.gaps.append(Gap(self.item_count, code, text, where, self.last_instruction, missing_ip))
        self.item_count += 1
        if missing_ip:
            self.end_ip = missing_ip  # the thread went on into code the image lacks

    def add_event(self, event_type, ip):
        self.event_items.append(self.item_count)
        self.event_types.append(event_type)
        self.event_ips.append(NO_IP if ip is None else ip)
        if event_type in (EventType.DISABLED, EventType.ASYNC_DISABLED) and ip is not None:
            self.end_ip = ip  # tracing stopped here: the thread's pc, not yet executed

    def add_exec_modes(self, items, ips):
        """Append exec-mode events the compiled loop recorded (they change no end ip), as numpy arrays."""
        self.event_types.frombytes(bytes([EventType.EXEC_MODE]) * len(items))
        self.event_items.frombytes(memoryview(items).cast("B"))
        self.event_ips.frombytes(memoryview(ips).cast("B"))

    def add_timestamps(self, items, values):
        """Append time stamps the compiled loop kept as add_timestamp keeps them, as numpy arrays."""
        self.tsc_items.frombytes(memoryview(items).cast("B"))
        self.tsc_values.frombytes(memoryview(values).cast("B"))

    def add_timestamp(self, tsc):
        if self.tsc_values and self.tsc_values[-1] == tsc:
            return
        if self.tsc_items and self.tsc_items[-1] == self.item_count:
            self.tsc_values[-1] = tsc  # several timing packets before one item: keep the latest
            return
        self.tsc_items.append(self.item_count)
        self.tsc_values.append(tsc)

    def trim_overrun(self, resume_ip, expander):
        """Drop the instructions decoded past the end of this piece of the trace (see part_ends.py)."""
        part_ends.trim_overrun(self, resume_ip, expander)

    def end_truncated(self, cut, expander):
        """End the part with a gap saying the trace ends inside a packet (see part_ends.py)."""
        part_ends.end_truncated(self, cut, expander)

    def pop_block(self):
        """Remove the last block of the sequence (its row stays in the table)."""
        block = self.block_sequence.pop()
        if len(self.block_sequence) % CHECKPOINT_SPACING == 0:
            self.checkpoints.pop()  # it marked the ordinal just removed
        size = self.block_sizes[block]
        self.item_count -= size
        self.instruction_count -= size

    def finish(self):
        self._block_ids = None  # only needed while decoding

    def name_missing_code(self, name_of):
        """Give each gap in code the image lacks the text ``name_of(ip)`` says (None: keep libipt's)."""
        for k, gap in enumerate(self.gaps):
            text = gap.missing_ip is not None and name_of(gap.missing_ip)
            if text:
                self.gaps[k] = replace(gap, text=text)

    # -- reading ----------------------------------------------------------------------

    def block_at(self, index):
        """``(ordinal, first_item)`` of the block (or gap) holding item ``index`` (0 <= index < item_count)."""
        if not 0 <= index < self.item_count:
            raise IndexError(f"item {index} is out of range (the trace has {self.item_count} items)")
        checkpoint = bisect_right(self.checkpoints, index) - 1
        ordinal = checkpoint * CHECKPOINT_SPACING
        first = self.checkpoints[checkpoint]
        sequence, sizes = self.block_sequence, self.block_sizes
        while True:
            count = sizes[sequence[ordinal]] or 1
            if index < first + count:
                return ordinal, first
            first += count
            ordinal += 1

    def gap(self, row):
        """The Gap a gap's table ``row`` stands for."""
        return self.gaps[self.block_ips[row]]

    def events_before(self, index):
        """The events recorded just before item ``index`` (index == item_count: those after the last item).

        A timestamp change there is reported as a TICK event too (it is stored in the timestamp table).
        """
        low = bisect_right(self.event_items, index - 1)
        high = bisect_right(self.event_items, index)
        found = [self.event(k) for k in range(low, high)]
        k = bisect_right(self.tsc_items, index) - 1
        if k >= 0 and self.tsc_items[k] == index:
            found.append(EventRecord(index, EventType.TICK, None))
        return found

    def event(self, k):
        ip = self.event_ips[k]
        return EventRecord(self.event_items[k], EventType(self.event_types[k]), None if ip == NO_IP else ip)

    @property
    def events(self):
        return [self.event(k) for k in range(len(self.event_items))]

    def events_of(self, types):
        """``[(item index, ip or None)]`` of the events of ``types``, in order, without an object per event."""
        wanted = {int(kind) for kind in types}
        items, ips = self.event_items, self.event_ips
        picked = [k for k, kind in enumerate(self.event_types) if kind in wanted]
        return [(items[k], None if ips[k] == NO_IP else ips[k]) for k in picked]

    def timestamp(self, index):
        """The TSC in effect at item ``index``, or None before the first timing packet."""
        k = bisect_right(self.tsc_items, index) - 1
        return self.tsc_values[k] if k >= 0 else None


class DecodedThread:
    """A thread's whole decoded trace: its parts in trace order, with absolute item indices."""

    def __init__(self, parts, decode_seconds=0.0):
        self.parts = [part for part in parts if part.item_count or part.event_count] or parts[:1]
        self.part_starts = array("Q")
        total = 0
        for part in self.parts:
            self.part_starts.append(total)
            total += part.item_count
        self.item_count = total
        self.instruction_count = sum(part.instruction_count for part in self.parts)
        self.end_ip = next((p.end_ip for p in reversed(self.parts) if p.end_ip is not None), None)
        self.decode_seconds = decode_seconds

    @property
    def storage_bytes(self):
        return sum(part.storage_bytes for part in self.parts)

    @property
    def decode_loop(self):
        """Which loop decoded the blocks: "compiled", "python", or None when no part decoded any."""
        return next((part.decode_loop for part in self.parts if part.decode_loop), None)

    @property
    def truncation(self):
        """The truncation.Cut where the trace file ends inside a packet, or None (only the last part's end counts)."""
        return self.parts[-1].truncation if self.parts else None

    @property
    def error_count(self):
        return sum(part.error_count for part in self.parts)

    @property
    def event_count(self):
        return sum(part.event_count for part in self.parts)

    @cached_property
    def has_timestamps(self):
        return any(part.has_timestamps for part in self.parts)  # asked per item: once, not per part each time

    def part_of(self, index):
        """``(part number, first item of that part)`` for item ``index`` (index == item_count: the last part)."""
        k = max(0, bisect_right(self.part_starts, index) - 1)
        while k and not self.parts[k].item_count and self.part_starts[k] == index:
            k -= 1
        return k, self.part_starts[k]

    @property
    def gaps(self):
        return [
            replace(gap, index=gap.index + start)
            for part, start in zip(self.parts, self.part_starts, strict=False)
            for gap in part.gaps
        ]

    @property
    def events(self):
        return [
            replace(event, index=event.index + start)
            for part, start in zip(self.parts, self.part_starts, strict=False)
            for event in part.events
        ]

    def events_of(self, types):
        """DecodedPart.events_of over every part, with absolute item indices."""
        return [
            (index + start, ip)
            for part, start in zip(self.parts, self.part_starts, strict=False)
            for index, ip in part.events_of(types)
        ]

    def events_before(self, index):
        """The events recorded just before item ``index`` (item_count: those after the last item)."""
        found = []
        k = bisect_right(self.part_starts, index) - 1  # the parts holding ``index``: those starting there, and
        while k > 0 and self.part_starts[k - 1] + self.parts[k - 1].item_count >= index:  # those ending there
            k -= 1
        while 0 <= k < len(self.parts) and self.part_starts[k] <= index:
            part, start = self.parts[k], self.part_starts[k]
            if index <= start + part.item_count:
                found += [replace(e, index=e.index + start) for e in part.events_before(index - start)]
            k += 1
        ticks = any(e.type == EventType.TICK for e in found)
        if ticks and 0 < index < self.item_count and self.timestamp(index) == self.timestamp(index - 1):
            found = [e for e in found if e.type != EventType.TICK]  # a piece restating its predecessor's time
        return found

    def timestamp(self, index):
        """The TSC in effect at item ``index``, or None before the first timing packet."""
        k, start = self.part_of(index)
        tsc = self.parts[k].timestamp(index - start)
        while tsc is None and k > 0:  # before a part's first timing packet, the previous part's last time holds
            k -= 1
            tsc = self.parts[k].timestamp(self.parts[k].item_count)
        return tsc
