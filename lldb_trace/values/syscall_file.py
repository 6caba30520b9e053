"""The system calls' results a recorder saved for one thread (``syscallResults``): read and checked as a whole.

The file is a JSON list; each entry names the ``instruction`` count at which
a system call ran and either what it left (``registers``: name -> value,
``memory``: [[address, hex bytes]], ``unknownMemory``) or, as
``signalFrame``, what the kernel wrote before a signal handler's first
instruction.  A file that is not that is refused in one line naming it, when
the trace is loaded, rather than when a value is first asked for.
"""

import itertools
import json

from ..errors import LldbTraceError
from .registers import INDEX

_SPACE = 1 << 64  # a register's values and the addresses: 64 bits


class SyscallResultsError(LldbTraceError):
    """A system call results file cannot be used."""


def read_syscall_results(path):
    """``[(instruction, kind, registers, memory, unknown_memory)]`` of the file, kind "call" or "signal frame"."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nesting without end
        reason = "it nests too deeply" if isinstance(error, RecursionError) else error
        raise SyscallResultsError(f"cannot read the system calls' results {path}: {reason}") from None
    if not isinstance(entries, list):
        raise _refused(path, "it is not a list of entries")
    found = [_entry(path, k, entry) for k, entry in enumerate(entries)]
    seen = set()
    for k, (instruction, kind, *_) in enumerate(found):
        if (instruction, kind) in seen:
            raise _refused(path, f"entry {k} is a second {kind} at instruction {instruction}")
        seen.add((instruction, kind))
    return found


def _entry(path, k, entry):
    if not isinstance(entry, dict) or not _count(entry.get("instruction")):
        raise _refused(path, f"entry {k} has no instruction count")
    if "signalFrame" in entry:
        return entry["instruction"], "signal frame", {}, _memory(path, k, entry["signalFrame"]), False
    registers = entry.get("registers", {})
    if not isinstance(registers, dict) or not all(name in INDEX and _count(value) for name, value in registers.items()):
        raise _refused(path, f"entry {k}'s registers are not register names with values")
    unknown = entry.get("unknownMemory", True)
    if not isinstance(unknown, bool):
        raise _refused(path, f"entry {k}'s unknownMemory is not true or false")
    return entry["instruction"], "call", registers, _memory(path, k, entry.get("memory", [])), unknown


def _memory(path, k, pieces):
    try:
        found = [(address, bytes.fromhex(data)) for address, data in pieces]
    except (TypeError, ValueError):
        found = None
    if found is None or not all(_count(address) and address + len(data) <= _SPACE for address, data in found):
        raise _refused(path, f"entry {k}'s memory is not [address, hex bytes] pairs within 64-bit addresses")
    spans = sorted((address, address + len(data)) for address, data in found)
    if any(end > start for (_, end), (start, _) in itertools.pairwise(spans)):
        raise _refused(path, f"entry {k}'s memory pieces overlap")
    return found


def _count(value):
    """A non-negative 64-bit number (an instruction count, a register's value, an address)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _SPACE


def _refused(path, problem):
    return SyscallResultsError(f"{path} is not a system call results file: {problem}; record again, or remove it")
