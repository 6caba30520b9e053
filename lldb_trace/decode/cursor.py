"""Reading a decoded thread item by item, forwards or backwards, from any index.

The storage (DecodedThread) is shared and never copied; a cursor is only a
position, so any number of them are cheap.  Instruction addresses come from
expanding the block an item falls in (cached per distinct block).
"""

from dataclasses import dataclass, field, replace

from .decoded_thread import EventRecord, Gap


@dataclass(frozen=True)
class Item:
    """One item of the trace: an instruction (``address``) or a gap (``gap``)."""

    index: int
    address: int | None = None
    gap: Gap | None = None
    events: list[EventRecord] = field(default_factory=list)  # events just before this item
    tsc: int | None = None

    @property
    def is_error(self):
        return self.gap is not None

    @property
    def kind(self):
        return "error" if self.gap is not None else "instruction"


class TraceCursor:
    """A position in ``decoded`` that moves forwards or backwards over its items."""

    def __init__(self, decoded, expander, forwards=False):
        self.decoded = decoded
        self.expander = expander
        self.forwards = forwards
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
        """The Item at the current position (the cursor stays there)."""
        return next(self.items(limit=1))

    def items(self, limit=None):
        """Items from the current position in the cursor's direction, moving the cursor past each."""
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
    position, first = part.locate(local)
    entries, sizes = part.entries, part.block_sizes
    while 0 <= position < len(entries):
        entry = entries[position]
        if not sizes[entry]:
            yield base + first, replace(part.gap(entry), index=base + first)
            count = 1
        else:
            addresses = expander.addresses(part.block_ips[entry], part.block_sizes[entry])
            count = len(addresses)
            offsets = range(local - first, count) if step > 0 else range(local - first, -1, -1)
            for offset in offsets:
                yield base + first + offset, addresses[offset]
        position += step
        if step > 0:
            first += count
            local = first
        elif position >= 0:
            previous = entries[position]
            first -= sizes[previous] or 1
            local = first + (sizes[previous] or 1) - 1
