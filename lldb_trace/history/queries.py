"""What "find" means to a user: a function by name, a source line or an address, turned into executions.

Shared by the API's ``thread.find`` and ``pt find``, so both resolve names and
lines the same way (through the symbolizer given: LLDB's or the ELF/DWARF one)
and fail with the same one-line errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LldbTraceError
from . import named_calls

if TYPE_CHECKING:
    from ..symbolize import Symbolizer
    from .search import Match
    from .thread_history import ThreadHistory


class FindError(LldbTraceError):
    """A search that cannot be made: ``reason`` says why, ``hint`` (for a debugger's user) how to look further."""

    def __init__(self, reason, hint=""):
        super().__init__(f"{reason} ({hint})" if hint else reason)
        self.reason = reason


def find(
    history: ThreadHistory,
    symbolizer: Symbolizer,
    function: str | None = None,
    line: tuple[str, int] | None = None,
    address: int | None = None,
    limit: int | None = None,
) -> list[Match]:
    """Executions newest first (search.Match): calls of ``function`` (a name: see named_calls.py), starts of
    ``line`` (``(file, line)``) or executions of the instruction at ``address``; exactly one of them."""
    given = [what for what in (function, line, address) if what is not None]
    if len(given) != 1:
        raise FindError("find needs exactly one of a function, a line (FILE:LINE) and an address")
    if function is not None:
        entries = named_calls.targets(history.map.forest, symbolizer, function)
        if not entries and not symbolizer.function_entries(function):
            raise FindError(f"no function named '{function}' in the traced modules", "'image lookup -r -n' lists names")
        return history.find(entries=entries, limit=limit) if entries else []
    if address is not None:
        return history.find(addresses=[address], limit=limit)
    assert line is not None  # (exactly one was given)
    addresses = symbolizer.line_starts(*line)
    if not addresses:
        raise FindError(f"no code for {line[0]}:{line[1]} in the traced modules (is the file name right?)")
    return history.find(addresses=addresses, limit=limit)
