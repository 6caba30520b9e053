"""The source of a live process's trace: a capture backend, read at every stop.

A backend (capture.SoftwareBackend, capture.IntelPtBackend) gives each
thread's bytes and a generation that changes when they do.  ``pt stop``
freezes the source: the backend lets go of the process and the CPU, and a
FrozenBackend keeps the bytes it held, so the trace stays readable and
savable until the process runs on.
"""

from pathlib import Path

from ..bundle.model import Module
from ..elf_info import ElfInfo, NotAnElfError


def live_module(path, load_address, build_id):
    """A bundle Module for a file mapped at ``load_address`` (its lowest page), or None if it is no ELF file."""
    try:
        elf = ElfInfo(path)
    except (NotAnElfError, OSError):
        return None
    return Module.from_elf(str(path), Path(path), elf, load_address, build_id)


class FrozenBackend:
    """What a backend held when tracing stopped: each thread's bytes, and the generations that go with them."""

    def __init__(self, backend):
        self.name = f"{backend.name}; tracing stopped"
        self._bytes = backend.snapshot()
        self._generations = {tid: backend.generation(tid) for tid in self._bytes}  # keeps decodes cached

    def trace_bytes(self, tid):
        return self._bytes.get(tid)

    def generation(self, tid):
        return self._generations.get(tid, 0)


class LiveSource:
    """A live process's backend, with two questions only the debugger can answer, as callables.

    ``memory_modules()`` reads the modules that have no file (the vdso) when saving; ``stop(tid)``
    is the thread's ThreadStop when a signal stopped it.
    """

    def __init__(self, backend, memory_modules=tuple, stop=lambda _tid: None):
        self.backend = backend
        self._memory_modules = memory_modules
        self.stop = stop

    @property
    def name(self):
        return self.backend.name

    def trace_bytes(self, tid):
        return self.backend.trace_bytes(tid)

    def generation(self, tid):
        return self.backend.generation(tid)

    def describe(self, tid):
        return {"live": {"backend": self.backend.name, "bytes": len(self.backend.trace_bytes(tid) or b"")}}

    def breaks(self, _tid):
        return ()  # a live capture's buffer is read whole at every stop

    def memory_modules(self):
        return self._memory_modules()

    def freeze(self):
        """``pt stop``: keep what the backend holds now, then close it."""
        frozen = FrozenBackend(self.backend)
        self.backend.close()
        self.backend = frozen
