"""A live process seen through /proc: its memory, its executable mappings, its signal handlers, its children."""

import os
from dataclasses import dataclass


def _status_field(tid, name, base):
    """A number of /proc/TID/status (``SigCgt`` in hex, ``Tgid`` in decimal); None if /proc cannot tell."""
    try:
        with open(f"/proc/{tid}/status") as status:
            for line in status:
                if line.startswith(f"{name}:"):
                    return int(line.split()[1], base)
    except OSError:
        return None
    return None


def caught_signals(pid):
    """The mask of signals the process (or thread) has a handler for (SigCgt); None if /proc cannot tell."""
    return _status_field(pid, "SigCgt", 16)


def thread_group(tid):
    """The pid of the process task ``tid`` belongs to (Tgid); None if /proc cannot tell."""
    return _status_field(tid, "Tgid", 10)


def children_of(pid):
    """The live child processes of process ``pid``, from /proc (every thread's ``children``); () if it cannot tell."""
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as children:
                found += [int(child) for child in children.read().split()]
    except OSError:
        return ()
    return tuple(found)


class ProcessMemory:
    """Reads the memory of a stopped, traced process through /proc/PID/mem."""

    def __init__(self, pid):
        self._fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)

    def read(self, address, size):
        """Up to ``size`` bytes at ``address``; shorter near the end of a mapping, b"" if unmapped."""
        while size:
            try:
                return os.pread(self._fd, size, address)
            except OSError:
                size //= 2
        return b""

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str


def vdso_image(pid, memory):
    """``(load address, bytes)`` of the process's vdso (a DSO the kernel maps, with no file), read through
    ``memory`` (a ProcessMemory), or None."""
    try:
        span = next(((m.start, m.end) for m in read_maps(pid) if m.path == "[vdso]"), None)
    except OSError:
        return None
    data = memory.read(span[0], span[1] - span[0]) if span is not None else b""
    return (span[0], data) if span is not None and len(data) == span[1] - span[0] else None


def read_maps(pid):
    """The process's mappings, from /proc/PID/maps."""
    mappings = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            path = fields[5].strip() if len(fields) > 5 else ""
            mappings.append(Mapping(start, end, fields[1], int(fields[2], 16), path))
    return mappings


class ModuleMap:
    """The executable files mapped into a process, with their load addresses.

    Refreshed on demand, when the recorder meets code outside every known
    executable range (a library loaded by dlopen, say).
    """

    def __init__(self, pid):
        self.pid = pid
        self.modules = {}  # path -> lowest mapped address
        self._ranges = []  # (start, end) of executable mappings, the vdso included
        self.refresh()

    def refresh(self):
        try:
            mappings = read_maps(self.pid)
        except OSError:
            return
        executable_files = {m.path for m in mappings if "x" in m.perms and m.path.startswith("/")}
        for mapping in mappings:
            if mapping.path in executable_files:
                low = self.modules.get(mapping.path)
                self.modules[mapping.path] = mapping.start if low is None else min(low, mapping.start)
        self._ranges = [(m.start, m.end) for m in mappings if "x" in m.perms]

    def covers(self, address):
        return any(start <= address < end for start, end in self._ranges)

    def note_address(self, address):
        """Make sure the module holding ``address`` is known."""
        if not self.covers(address):
            self.refresh()

    def bias_of(self, path):
        """Where the file at ``path`` is mapped (its lowest address), or None."""
        real = os.path.realpath(path)
        for module, low in self.modules.items():
            if os.path.realpath(module) == real:
                return low
        return None
