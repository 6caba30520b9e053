"""A stretch of a thread's history, ``FROM:TO`` as users type it (item indices, both included)."""

from dataclasses import dataclass

from ..errors import LldbTraceError


class RangeError(LldbTraceError):
    """A --range that is not FROM:TO or does not meet the thread's items."""


@dataclass(frozen=True)
class ItemRange:
    """Items ``first``..``last``, both included."""

    first: int
    last: int

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def __str__(self) -> str:
        return f"{self.first}:{self.last}"


def parse_range(text: str | None, item_count: int) -> ItemRange:
    """The ItemRange ``text`` names within ``item_count`` items; None (no --range) is every item, and so is ``:``.

    Either side may be left out (``:500``, ``1000:``) and negative numbers count
    from the end, as Python slices do, but TO is included.
    """
    if item_count <= 0:
        raise RangeError("the thread has no items to analyse")
    if text is None:
        return ItemRange(0, item_count - 1)
    if not text.strip():
        raise RangeError("the range is empty: write FROM:TO with item indices, e.g. 1000:2000 (':' is every item)")
    start, colon, stop = text.partition(":")
    try:
        first = int(start, 0) if start.strip() else 0
        last = int(stop, 0) if stop.strip() else item_count - 1
    except ValueError:
        raise RangeError(f"bad range {text!r}: write FROM:TO with item indices, e.g. 1000:2000") from None
    if not colon:
        raise RangeError(f"bad range {text!r}: write FROM:TO with item indices, e.g. 1000:2000")
    first = first + item_count if first < 0 else first
    last = last + item_count if last < 0 else last
    last = min(last, item_count - 1)
    if first < 0 or first > last:
        raise RangeError(f"range {text} holds no items: the thread has items 0 to {item_count - 1}")
    return ItemRange(first, last)
