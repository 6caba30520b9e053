"""``pt find``'s answer: the matching executions as rows a user can ``pt goto``, in text or JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..history import Match
    from ..symbolize import Symbolizer


def shown_matches(matches: Iterable[Match], symbolizer: Symbolizer) -> list[dict]:
    """Plain data for each history.Match: index, timestamp, function, depth and where it is, and the PLT stub
    a call went through when it is named otherwise than the function it reached (an IFUNC's variant)."""
    shown = []
    for match in matches:
        location = symbolizer.locate(match.function) if match.function is not None else None
        stub = symbolizer.locate(match.stub) if match.stub is not None else None
        shown_stub = stub is not None and stub.stub and (location is None or stub.function != location.function)
        via = stub.function_label if stub is not None and shown_stub else None
        shown.append(
            {
                "index": match.index,
                "tsc": match.tsc,
                "function": location.function_label if location is not None else None,
                "functionAddress": f"0x{match.function:x}" if match.function is not None else None,
                "depth": match.depth,
                "via": via,
            }
        )
    return shown


def matches_text(shown: Sequence[dict], what: str, more: bool) -> str:
    """A table newest first; ``what`` names the search and the thread, ``more``: -c cut the list short."""
    if not shown:
        return f"No executions of {what}."
    with_tsc = any(match["tsc"] is not None for match in shown)
    width = max(len(str(shown[0]["index"])), len("index"))
    header = f"{'index':>{width}}  depth  " + ("tsc                 " if with_tsc else "") + "function"
    lines = [f"Executions of {what}, newest first ('pt goto INDEX' goes to one):", header]
    for match in shown:
        tsc = f"{match['tsc']:<#18x}  " if with_tsc and match["tsc"] is not None else (" " * 20 if with_tsc else "")
        via = f" (via {match['via']})" if match["via"] else ""
        lines.append(f"{match['index']:>{width}}  {match['depth']:>5}  {tsc}{match['function'] or '(unknown)'}{via}")
    if more:
        lines.append(f"... and more: '-c N' shows more than {len(shown)}")
    return "\n".join(lines)


def matches_json(shown: Sequence[dict]) -> str:
    return json.dumps(shown, indent=1)
