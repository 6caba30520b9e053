"""What "find" means to a user: a function by name, a source line or an address, turned into executions.

Shared by the API's ``thread.find`` and ``pt find``, so both resolve names and
lines the same way (through the symbolizer given: LLDB's or the ELF/DWARF one)
and fail with the same one-line errors.
"""

from ..errors import LldbTraceError
from . import named_calls


class FindError(LldbTraceError):
    """A search that names nothing in the traced modules, or is not one search."""


def find(history, symbolizer, function=None, line=None, address=None, limit=None):
    """Executions newest first (search.Match): calls of ``function`` (a name: see named_calls.py), starts of
    ``line`` (``(file, line)``) or executions of the instruction at ``address``; exactly one of them."""
    given = [what for what in (function, line, address) if what is not None]
    if len(given) != 1:
        raise FindError("find needs exactly one of a function, a line (FILE:LINE) and an address")
    if function is not None:
        entries = named_calls.targets(history.map.forest, symbolizer, function)
        if not entries and not symbolizer.function_entries(function):
            raise FindError(f"no function named '{function}' in the traced modules ('image lookup -r -n' lists names)")
        return history.find(entries=entries, limit=limit) if entries else []
    addresses = [address] if address is not None else symbolizer.line_starts(*line)
    if not addresses:
        raise FindError(f"no code for {line[0]}:{line[1]} in the traced modules (is the file name right?)")
    return history.find(addresses=addresses, limit=limit)
