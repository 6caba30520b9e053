"""``pt find``'s answer: the matching executions as rows a user can ``pt goto``, in text or JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..history import Match
    from ..symbolize import Symbolizer


def match_entries(matches: Iterable[Match], symbolizer: Symbolizer) -> list[dict]:
    """Plain data for each history.Match: index, timestamp, function, depth and where it is, and the PLT stub
    a call went through when it is named otherwise than the function it reached (an IFUNC's variant)."""
    entries = []
    for match in matches:
        location = symbolizer.locate(match.function) if match.function is not None else None
        stub = symbolizer.locate(match.stub) if match.stub is not None else None
        shown_stub = stub is not None and stub.stub and (location is None or stub.function != location.function)
        via = stub.function_label if stub is not None and shown_stub else None
        entries.append(
            {
                "index": match.index,
                "tsc": match.tsc,
                "function": location.function_label if location is not None else None,
                "functionAddress": f"0x{match.function:x}" if match.function is not None else None,
                "depth": match.depth,
                "via": via,
            }
        )
    return entries


def matches_text(entries: Sequence[dict], what: str, more: bool) -> str:
    """A table newest first; ``what`` names the search and the thread, ``more``: -c cut the list short."""
    if not entries:
        return f"No executions of {what}."
    with_tsc = any(entry["tsc"] is not None for entry in entries)
    width = max(len(str(entries[0]["index"])), len("index"))
    header = f"{'index':>{width}}  depth  " + ("tsc                 " if with_tsc else "") + "function"
    lines = [f"Executions of {what}, newest first ('pt goto INDEX' goes to one):", header]
    for entry in entries:
        tsc = f"{entry['tsc']:<#18x}  " if with_tsc and entry["tsc"] is not None else (" " * 20 if with_tsc else "")
        via = f" (via {entry['via']})" if entry["via"] else ""
        lines.append(f"{entry['index']:>{width}}  {entry['depth']:>5}  {tsc}{entry['function'] or '(unknown)'}{via}")
    if more:
        lines.append(f"... and more: '-c N' shows more than {len(entries)}")
    return "\n".join(lines)


def matches_json(entries: Sequence[dict]) -> str:
    return json.dumps(entries, indent=1)
