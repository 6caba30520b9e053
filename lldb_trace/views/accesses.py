"""``pt find --write/--read``'s answer: the instructions that wrote (read) some bytes, newest first, with the
old and new values where known, as rows a user can ``pt goto``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..symbolize import Symbolizer
    from ..values.recovery import Access


def shown_accesses(found: Iterable[Access], pc_at, symbolizer: Symbolizer, asked: tuple[int, int]) -> list[dict]:
    """Plain data for each values.Access, its bytes clipped to the ``asked`` ``(address, size)``;
    ``pc_at(position)`` is the address of the instruction there."""
    shown = []
    for whole in found:
        access = clipped(whole, *asked)
        pc = pc_at(access.position)
        location = symbolizer.locate(pc) if pc else None
        shown.append(
            {
                "index": access.position,
                "kind": access.kind,
                "exact": access.exact,
                "address": f"0x{access.address:x}" if access.address is not None else None,
                "size": access.size,
                "old": access.old.hex() if access.old is not None else None,
                "new": access.new.hex() if access.new is not None else None,
                "pc": f"0x{pc:x}" if pc else None,
                "where": location.symbol_text if location is not None else None,
                "disassembly": f"{location.mnemonic} {location.operands}".strip() if location is not None else None,
            }
        )
    return shown


def clipped(access: Access, address: int, size: int) -> Access:
    """``access`` narrowed to the bytes of ``[address, address + size)`` it touched (a 4 KiB ``xsave`` that
    wrote 8 watched bytes shows those 8)."""
    if access.address is None:
        return access
    start, end = max(access.address, address), min(access.address + access.size, address + size)
    if start >= end or (start, end) == (access.address, access.address + access.size):
        return access
    first, last = start - access.address, end - access.address
    old = access.old[first:last] if access.old is not None else None
    new = access.new[first:last] if access.new is not None else None
    return replace(access, address=start, size=end - start, old=old, new=new)


def _value(hex_bytes: str | None) -> str:
    """Little-endian bytes as a number (up to 8 bytes) or as bytes; ``?`` where unknown."""
    if hex_bytes is None:
        return "?"
    data = bytes.fromhex(hex_bytes)
    return f"0x{int.from_bytes(data, 'little'):0{2 * len(data)}x}" if len(data) <= 8 else hex_bytes


def accesses_text(shown: Sequence[dict], what: str, more: bool) -> str:
    """A table newest first; ``what`` names the bytes and the thread; ``more``: -c cut the list short.  An
    instruction that may have touched the bytes, of which only the area it may reach is known (a masked store),
    is listed as "may write"; those whose address is not known are counted between the ones that did, not listed
    one by one (``--json`` lists them)."""
    if not shown:
        return f"No instruction in the trace {what}."
    width = max(len(str(shown[0]["index"])), len("index"))
    lines = [f"Instructions that {what}, newest first ('pt goto INDEX' goes to one):"]
    unsure: list[dict] = []
    for row in shown:
        if row["address"] is None:
            unsure.append(row)
            continue
        lines.extend(_unsure_line(unsure, width))
        unsure = []
        change = f"{_value(row['old'])} -> {_value(row['new'])}" if row["kind"] == "write" else _value(row["new"])
        verb = row["kind"] if row["exact"] else f"may {row['kind']}"
        lines.append(f"{row['index']:>{width}}  {verb} {row['size']} bytes at {row['address']}: {change}")
        lines.append(f"{'':>{width}}    {row['where'] or row['pc']}: {row['disassembly'] or ''}")
    lines.extend(_unsure_line(unsure, width))
    if more:
        lines.append(f"... and more: '-c N' shows more than {sum(1 for row in shown if row['exact'])}")
    return "\n".join(lines)


def _unsure_line(rows: Sequence[dict], width: int) -> list[str]:
    if not rows:
        return []
    span = f"{rows[-1]['index']}-{rows[0]['index']}" if len(rows) > 1 else str(rows[0]["index"])
    count = f"{len(rows)} instructions" if len(rows) > 1 else "1 instruction"
    unknown = "where or how far they reach is not known there"
    return [f"{'':>{width}}  ({count} at {span} may have: {unknown}; --json lists them)"]


def accesses_json(shown: Sequence[dict]) -> str:
    return json.dumps(shown, indent=1)
