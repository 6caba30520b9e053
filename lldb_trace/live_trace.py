"""The trace of a live process, as the dumps and the saver see it.

A LiveProcessTrace is a ProcessTrace whose bundle is made up from the live
target (its modules at their load addresses, its traced threads) and whose
raw trace comes from a capture backend instead of files.  A thread is decoded
again only when its backend says the trace changed since the last decode.
The CPU it names is the one its packets decode with (see capture.cpu), so a
saved live trace loads in native LLDB too.
"""

from pathlib import Path

from .bundle.model import Bundle, Module, Process, Thread
from .capture.cpu import SOFTWARE_CPU, host_cpu
from .elf_info import ElfInfo, NotAnElfError
from .process_trace import ProcessTrace

HARDWARE_BACKEND = "intel-pt"  # the backend whose packets this machine's CPU wrote


def live_module(path, load_address, build_id):
    """A bundle Module for a file mapped at ``load_address`` (its lowest page), or None if it is no ELF file."""
    try:
        elf = ElfInfo(path)
    except (NotAnElfError, OSError):
        return None
    return Module.from_elf(str(path), Path(path), elf, load_address, build_id)


class LiveProcessTrace(ProcessTrace):
    """``backend`` supplies ``trace_bytes(tid)`` and ``generation(tid)`` (a number that changes with the trace)."""

    def __init__(self, pid, triple, tids, modules, backend, description="live process"):
        cpu = host_cpu() if backend.name == HARDWARE_BACKEND else SOFTWARE_CPU
        threads = tuple(Thread(tid, None) for tid in tids)
        process = Process(pid, triple, threads, tuple(modules))
        bundle = Bundle(Path(f"<{description}>"), backend.name, cpu, (process,))
        super().__init__(bundle, process)
        self.backend = backend
        self._generations = {}

    def trace_bytes(self, tid):
        self.thread(tid)
        return self.backend.trace_bytes(tid)

    def decoded(self, tid):
        generation = self.backend.generation(tid)
        if self._generations.get(tid) != generation:
            self._decoded.pop(tid, None)
            self._forests.pop(tid, None)
            self._generations[tid] = generation
        return super().decoded(tid)
