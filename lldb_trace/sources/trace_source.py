"""The questions every trace source answers: the one interface between a ProcessTrace and its bytes.

A ProcessTrace decodes whatever its source gives it and asks nothing else
about where the bytes came from, so a new kind of recording needs only a new
class that answers these (checked by mypy, structurally: no base class).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..bundle.model import ThreadStop
    from ..perf_data.aux_streams import Break

TraceBytes = bytes | memoryview  # a trace file is mapped, not read (mapped_file.py)
MemoryModule = tuple[str, int, bytes]  # (system path, load address, bytes) of a module with no file


class TraceSource(Protocol):
    """Where each thread's raw Intel PT bytes come from."""

    @property
    def name(self) -> str:
        """The kind of source, as ``trace dump`` names the bundle format."""
        ...

    def trace_bytes(self, tid: int) -> TraceBytes | None:
        """The thread's whole raw trace, or None if it has none."""
        ...

    def generation(self, tid: int) -> int:
        """A number that changes whenever the thread's bytes change (a live trace grows at every stop),
        so decodes are redone only then."""
        ...

    def describe(self, tid: int) -> dict:
        """What ``trace dump`` shows of where the bytes come from."""
        ...

    def memory_modules(self) -> Sequence[MemoryModule]:
        """Modules that exist only in memory (the vdso of a live process), for ``trace save``."""
        ...

    def stop(self, tid: int) -> ThreadStop | None:
        """How the thread stopped where the source knows it (a live thread stopped by a signal), else None
        and the bundle's word holds."""
        ...

    def breaks(self, tid: int) -> Sequence[Break]:
        """Where the bytes stop continuing each other (trace lost while recording, as a perf.data can say),
        each decoded past with a gap."""
        ...
