"""Which addresses a walk's ``functions``/``modules`` filters let through, decided once per function.

Names are matched as users type them: ``fib``, ``module`fib``, or globs of
either (``*alloc``, ``libc*`*``); ``name@version`` symbols also match their
bare name.  A module is its file name (a glob too).  An address is judged by
the function around it (its start, from the unwind tables), so the symbolizer
is asked once per function, not once per address; the verdicts are kept.
A PLT stub belongs to its module but is no function of its own.

A name typed without globs also matches the function's other names (``malloc``
is ``__libc_malloc`` to a symbolizer): the symbolizer's ``function_entries``
finds every function of that name, aliases included.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import numpy as np

from ..errors import LldbTraceError

if TYPE_CHECKING:
    from ..traced_thread import TracedThread

_GLOB = frozenset("*?[")


class FilterError(LldbTraceError):
    """A functions filter naming a function the traced modules do not have."""


class Filter:
    """``wanted(addresses) -> bool array``; ``active`` is False when every address is wanted."""

    def __init__(
        self,
        thread: TracedThread,
        functions: str | Iterable[str] | None = None,
        modules: str | Iterable[str] | None = None,
    ) -> None:
        self._symbolizer, self._ranges = thread.symbolizer, thread.functions
        self._functions = [_split(pattern) for pattern in _listed(functions, "functions")]
        self._modules = _listed(modules, "modules")
        self.active = bool(self._functions or self._modules)
        self._named = self._named_entries()
        self._verdicts: dict[int, bool] = {}  # function start (or a lone address) -> bool

    def wanted(self, addresses: np.ndarray) -> np.ndarray:
        """Per address of ``addresses`` (a uint64 array): does the filter let it through?"""
        addresses = np.asarray(addresses, dtype=np.uint64)
        if not self.active:
            return np.ones(len(addresses), dtype=bool)
        unique, inverse = np.unique(addresses, return_inverse=True)
        verdicts = np.fromiter((self._wants(a) for a in unique.tolist()), dtype=bool, count=len(unique))
        return verdicts[inverse.reshape(-1)]

    def _wants(self, address):
        found = self._ranges.containing(address)
        key = found[0] if found is not None else address
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._verdicts[key] = self._judge(key)
        return verdict

    def _judge(self, address):
        location = self._symbolizer.locate(address)
        module = location.module or ""
        if self._modules and not any(fnmatchcase(module, pattern) for pattern in self._modules):
            return False
        if not self._functions:
            return True
        if location.stub or location.function is None:
            return False
        if address in self._named:
            return True
        names = (location.function, location.function.split("@")[0])
        return any(
            fnmatchcase(module, module_pattern) and any(fnmatchcase(name, name_pattern) for name in names)
            for module_pattern, name_pattern in self._functions
        )

    def _named_entries(self):
        """The entries of the functions named without globs, under any of their names; a name no module has
        fails here, as a typo would otherwise quietly deliver nothing."""
        entries: set[int] = set()
        for module_pattern, name in self._functions:
            if _GLOB & set(name):
                continue
            found = self._symbolizer.function_entries(name)
            if not found:
                raise FilterError(f"no function named '{name}' in the traced modules (give a glob to match loosely)")
            entries.update(a for a in found if fnmatchcase(self._symbolizer.locate(a).module or "", module_pattern))
        return entries


def _split(pattern):
    """``(module glob, name glob)`` of ``module`name`` or ``name`` (any module)."""
    module, tick, name = pattern.rpartition("`")
    return (module or "*", name) if tick else ("*", pattern)


def _listed(patterns, what):
    """A filter's patterns as a list: one string is one pattern, not its letters."""
    if patterns is None:
        return []
    if isinstance(patterns, str):
        return [patterns]
    patterns = list(patterns)
    if not all(isinstance(p, str) and p for p in patterns):
        raise FilterError(f"{what} must be names (strings), not {patterns!r}")
    return patterns
