"""Reading a decoded thread item by item, forwards or backwards, from any index.

The storage (DecodedThread) is shared and never copied; a cursor is only an
item index, so any number of them are cheap.  Instruction addresses come from
expanding the block an item falls in (cached per distinct block); what an
address is (symbol, line, disassembly) comes from a symbolizer, on demand.
"""

from dataclasses import dataclass, field, replace

from ..errors import LldbTraceError
from .decoded_thread import EventRecord, Gap


@dataclass(frozen=True)
class Item:
    """One item of the trace: an instruction (``address``) or a gap (``gap``).

    With a ``symbolizer`` (items from ``lldb_trace.api`` have one), an
    instruction also tells what it is, on demand: ``location`` and its parts.
    """

    index: int
    address: int | None = None
    gap: Gap | None = None
    events: list[EventRecord] = field(default_factory=list)  # events just before this item
    tsc: int | None = None
    symbolizer: object = field(default=None, repr=False, compare=False)

    @property
    def kind(self):
        return "error" if self.gap is not None else "instruction"

    @property
    def location(self):
        """The instruction's Location (module, function, file, line, disassembly); None for a gap."""
        if self.gap is not None:
            return None
        if self.symbolizer is None:
            raise LldbTraceError("this item has no symbolizer: read items through lldb_trace.api to get locations")
        return self.symbolizer.locate(self.address)

    @property
    def module(self):
        return self.location and self.location.module

    @property
    def symbol(self):
        """The symbol's name (for a PLT stub, the symbol it jumps to), as JSON dumps give it."""
        return self.location and self.location.function

    @property
    def function(self):
        """``module`function`` as LLDB prints it (``module`symbol stub for: free`` in a PLT stub)."""
        return self.location and self.location.function_label

    @property
    def file(self):
        return self.location and self.location.file

    @property
    def line(self):
        return self.location and self.location.line

    @property
    def source(self):
        """``file:line`` (the file's base name), or None without line information."""
        return self.location and self.location.source

    @property
    def disassembly(self):
        return self.location and self.location.disassembly

    def __repr__(self):
        if self.gap is not None:
            return f"<Item {self.index} error {self.gap.code}: {self.gap.text!r}>"
        if self.symbolizer is None:
            return f"<Item {self.index} 0x{self.address:x}>"
        where = self.location
        source = f" at {where.source}" if where.source else ""
        return f"<Item {self.index} 0x{self.address:x} {where.function_label}{source}: {where.disassembly}>"


class TraceCursor:
    """An item index in ``decoded`` that moves forwards or backwards over its items."""

    def __init__(self, decoded, expander, forwards=False, symbolizer=None):
        self.decoded = decoded
        self.expander = expander
        self.forwards = forwards
        self.symbolizer = symbolizer
        self.index = 0 if forwards else decoded.item_count - 1

    @property
    def has_value(self):
        return 0 <= self.index < self.decoded.item_count

    def seek(self, index):
        """Move to absolute item ``index`` (negative: from the end, as in Python)."""
        self.index = index + self.decoded.item_count if index < 0 else index
        return self.has_value

    def next(self):
        """Move one item in the cursor's direction; False once past either end."""
        self.index += 1 if self.forwards else -1
        return self.has_value

    def item(self):
        """The Item at the cursor's index (the cursor stays there)."""
        return next(self.items(limit=1))

    def items(self, limit=None):
        """Items from the cursor's index in its direction, moving the cursor past each."""
        decoded = self.decoded
        for produced, (index, value) in enumerate(walk(decoded, self.index, self.forwards, self.expander)):
            if limit is not None and produced >= limit:
                return
            gap = value if isinstance(value, Gap) else None
            yield Item(
                index,
                None if gap else value,
                gap,
                decoded.events_before(index),
                decoded.timestamp(index) if decoded.has_timestamps else None,
                self.symbolizer,
            )
            self.index = index + (1 if self.forwards else -1)


def walk(decoded, start, forwards, expander):
    """``(index, address or Gap)`` from item ``start`` in one direction, to the end of the trace."""
    if not 0 <= start < decoded.item_count:
        return
    step = 1 if forwards else -1
    k, part_start = decoded.part_of(start)
    local = start - part_start
    while 0 <= k < len(decoded.parts):
        part = decoded.parts[k]
        if part.item_count and 0 <= local < part.item_count:
            yield from _walk_part(part, decoded.part_starts[k], local, step, expander)
        k += step
        if 0 <= k < len(decoded.parts):
            local = 0 if forwards else decoded.parts[k].item_count - 1


def _walk_part(part, base, local, step, expander):
    ordinal, first = part.block_at(local)
    sequence, sizes = part.block_sequence, part.block_sizes
    while 0 <= ordinal < len(sequence):
        row = sequence[ordinal]
        if not sizes[row]:
            yield base + first, replace(part.gap(row), index=base + first)
            count = 1
        else:
            addresses = expander.addresses(part.block_ips[row], part.block_sizes[row])
            count = len(addresses)
            offsets = range(local - first, count) if step > 0 else range(local - first, -1, -1)
            for offset in offsets:
                yield base + first + offset, addresses[offset]
        ordinal += step
        if step > 0:
            first += count
            local = first
        elif ordinal >= 0:
            previous = sequence[ordinal]
            first -= sizes[previous] or 1
            local = first + (sizes[previous] or 1) - 1


def runs(decoded, start, expander):
    """From item ``start`` on: ``(index, addresses)`` per block (the first one from ``start``), or ``(index, Gap)``.

    Each run ends where the block does: at a call, a return, an indirect or
    conditional branch, or an event.  Following a call's first few blocks
    this way costs nothing per instruction.
    """
    if not 0 <= start < decoded.item_count:
        return
    first_part, _ = decoded.part_of(start)
    local = start - decoded.part_starts[first_part]
    for part, base in zip(decoded.parts[first_part:], decoded.part_starts[first_part:], strict=False):
        if part.item_count and local < part.item_count:
            ordinal, first = part.block_at(local)
            sequence = part.block_sequence
            for k in range(ordinal, len(sequence)):  # not a slice: that would copy the sequence
                row = sequence[k]
                size = part.block_sizes[row]
                if not size:
                    yield base + first, replace(part.gap(row), index=base + first)
                else:
                    skip = max(0, local - first)
                    yield base + first + skip, expander.addresses(part.block_ips[row], size)[skip:]
                first += size or 1
        local = 0
