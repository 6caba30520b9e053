"""Which calls are calls of a function NAME, judged by what ran.

A program calls ``strcpy`` through its PLT stub (LLDB's ``symbol stub for:
strcpy``), whose GOT entry leads where the dynamic linker bound it: for an
IFUNC, to the implementation its resolver chose for the CPU
(``__strcpy_avx2``), a function with another name.  So a call of NAME is a
call whose function that ran is one that NAME leads to: a function named
NAME, or one that a call through a stub named NAME reached.  The IFUNC
symbol NAME itself is its resolver's entry: the resolver's run (ld.so
calling it while binding the name) is a call of the resolver, not of NAME;
it is found by the resolver's own name, or by its address.  These are the
functions a breakpoint on NAME stops in (GDB and a live LLDB put it on the
implementation the resolver returns), so ``pt find``, the API's ``find``,
``--function-calls --function`` and history breakpoints agree; each names a
call by the item of its function's first instruction (CallForest.entered).
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import numpy as np

from ..decode.forest_builder import ASYNCHRONOUS

if TYPE_CHECKING:
    from ..decode.call_forest import CallForest
    from ..symbolize import Location, Symbolizer

_GLOB_CHARACTERS = frozenset("*?[")
_ADDRESSES = range(1, 2**64)  # what a function entry can be (a garbled trace's symbols may say otherwise)


def is_glob(pattern: str) -> bool:
    return bool(_GLOB_CHARACTERS.intersection(pattern))


def targets(forest: CallForest, symbolizer: Symbolizer, pattern: str) -> set[int]:
    """Entry addresses of the functions that calls of ``pattern`` (a name, or a shell glob) run.

    A plain name means what LLDB means by it (aliases and debug-info names too); a glob is matched
    against the name each function is shown with."""
    if is_glob(pattern):
        entries = np.unique(forest.entry).tolist()
        named = {entry for entry in entries if entry and _runs_as(symbolizer.locate(entry), pattern)}
    else:
        named = set(symbolizer.function_entries(pattern)) - set(symbolizer.ifunc_entries(pattern))
    return {entry for entry in named if entry in _ADDRESSES} | reached_through_stubs(forest, symbolizer, pattern)


def reached_through_stubs(forest: CallForest, symbolizer: Symbolizer, pattern: str) -> set[int]:
    """Entry addresses of the functions that calls through a PLT stub named like ``pattern`` reached."""
    rows, stubs = forest.extra_rows, forest.extra_values  # a signal handler's extra is no stub
    through = (forest.flags[rows] & ASYNCHRONOUS) == 0
    rows, stubs = rows[through], stubs[through]
    named = [stub for stub in np.unique(stubs).tolist() if _stub_named(symbolizer.locate(stub), pattern)]
    return set(forest.entry[rows[np.isin(stubs, np.array(named, dtype=np.uint64))]].tolist())


def resolve_breakpoints(forest: CallForest, symbolizer: Symbolizer, locations: Mapping[int, str]) -> dict[int, str]:
    """``locations`` (address -> breakpoint location name) with an IFUNC resolver's address replaced by the
    functions its name leads to.  Without a process to run the resolver in, LLDB leaves ``b strcpy`` on the
    resolver ("failed to resolve indirect function"): a history breakpoint stops where strcpy was called."""
    resolved: dict[int, str] = {}
    for address, name in locations.items():
        location = symbolizer.locate(address)
        if location.resolver and location.function:
            for target in sorted(targets(forest, symbolizer, location.function)):
                resolved.setdefault(target, name)
        else:
            resolved.setdefault(address, name)
    return resolved


def _matches(name: str | None, pattern: str) -> bool:
    """Does a symbol ``name`` match ``pattern``, with or without its version (``memcpy@@GLIBC_2.14``)?"""
    if name is None:
        return False
    names = {name, name.split("@")[0]}
    return any(fnmatchcase(n, pattern) for n in names) if is_glob(pattern) else pattern in names


def _runs_as(location: Location, pattern: str) -> bool:
    """Is a call of the function at ``location`` a call of ``pattern`` by that function's own name?"""
    return not location.stub and not location.resolver and _matches(location.function, pattern)


def _stub_named(location: Location, pattern: str) -> bool:
    return location.stub and _matches(location.function, pattern)
