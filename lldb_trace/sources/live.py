"""The source of a live process's trace: a capture backend, read at every stop.

A backend (capture.SoftwareBackend, capture.IntelPtBackend) gives each
thread's bytes and a generation that changes when they do.  ``pt stop``
freezes the source: the backend lets go of the process and the CPU, and a
FrozenBackend keeps the bytes it held, so the trace stays readable and
savable until the process runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from ..bundle.model import Module, ThreadStop
from ..elf_info import ElfInfo, NotAnElfError
from .trace_source import MemoryModule, TraceBytes


class CaptureBackend(Protocol):
    """What a LiveSource reads of a capture backend (capture.SoftwareBackend, capture.IntelPtBackend)."""

    @property
    def name(self) -> str: ...

    def trace_bytes(self, tid: int) -> TraceBytes | None: ...

    def generation(self, tid: int) -> int: ...

    def snapshot(self) -> dict[int, TraceBytes | None]: ...

    def close(self) -> None: ...


def live_module(path: str | Path, load_address: int, build_id: str | None) -> Module | None:
    """A bundle Module for a file mapped at ``load_address`` (its lowest page), or None if it is no ELF file."""
    try:
        elf = ElfInfo(path)
    except (NotAnElfError, OSError):
        return None
    return Module.from_elf(str(path), Path(path), elf, load_address, build_id)


class FrozenBackend:
    """What a backend held when tracing stopped: each thread's bytes, and the generations that go with them."""

    def __init__(self, backend: CaptureBackend) -> None:
        self.name = f"{backend.name}; tracing stopped"
        self._bytes = backend.snapshot()
        self._generations = {tid: backend.generation(tid) for tid in self._bytes}  # keeps decodes cached

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        return self._bytes.get(tid)

    def generation(self, tid: int) -> int:
        return self._generations.get(tid, 0)

    def snapshot(self) -> dict[int, TraceBytes | None]:
        return dict(self._bytes)

    def close(self) -> None:
        """Nothing to let go of: the bytes are the FrozenBackend's own."""


class LiveSource:
    """A live process's backend, with two questions only the debugger can answer, as callables.

    ``memory_modules()`` reads the modules that have no file (the vdso) when saving; ``stop(tid)``
    is the thread's ThreadStop when a signal stopped it.
    """

    def __init__(
        self,
        backend: CaptureBackend,
        memory_modules: Callable[[], Sequence[MemoryModule]] = tuple,
        stop: Callable[[int], ThreadStop | None] = lambda _tid: None,
    ) -> None:
        self.backend = backend
        self._memory_modules = memory_modules
        self.stop = stop

    @property
    def name(self) -> str:
        return self.backend.name

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        return self.backend.trace_bytes(tid)

    def generation(self, tid: int) -> int:
        return self.backend.generation(tid)

    def describe(self, tid: int) -> dict:
        return {"live": {"backend": self.backend.name, "bytes": len(self.backend.trace_bytes(tid) or b"")}}

    def breaks(self, _tid: int) -> tuple[()]:
        return ()  # a live capture's buffer is read whole at every stop

    def memory_modules(self) -> Sequence[MemoryModule]:
        return self._memory_modules()

    def freeze(self) -> None:
        """``pt stop``: keep what the backend holds now, then close it."""
        frozen = FrozenBackend(self.backend)
        self.backend.close()
        self.backend = frozen
