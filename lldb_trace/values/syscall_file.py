"""The system calls' results a recorder saved for one thread (``syscallResults``): read and checked as a whole.

The file is a JSON list; each entry names the ``instruction`` count at which
a system call ran and either what it left (``registers``: name -> value,
``memory``: [[address, hex bytes]], ``unknownMemory``) or, as
``signalFrame``, what the kernel wrote before a signal handler's first
instruction.  A file that is not that is refused in one line naming it, when
the trace is loaded, rather than when a value is first asked for.
"""

import json

from ..errors import LldbTraceError
from .registers import INDEX


class SyscallResultsError(LldbTraceError):
    """A system call results file cannot be used."""


def read_syscall_results(path):
    """``[(instruction, kind, registers, memory, unknown_memory)]`` of the file, kind "call" or "signal frame"."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SyscallResultsError(f"cannot read the system calls' results {path}: {error}") from None
    if not isinstance(entries, list):
        raise _refused(path, "it is not a list of entries")
    return [_entry(path, k, entry) for k, entry in enumerate(entries)]


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
    if found is None or not all(_count(address) for address, _ in found):
        raise _refused(path, f"entry {k}'s memory is not [address, hex bytes] pairs")
    return found


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _refused(path, problem):
    return SyscallResultsError(f"{path} is not a system call results file: {problem}; record again, or remove it")
