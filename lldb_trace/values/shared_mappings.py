"""Memory another process may write while the traced thread runs: the shared mappings a core lists.

A ``MAP_SHARED`` mapping (shared anonymous memory, a memfd, POSIX or System V
shared memory, a file mapped shared) can change between any two instructions
of the traced thread: another process writes it, or this one does through
another mapping of the same memory.  So nothing the trace shows of it carries
from one position to another (generations.py: *volatile* bytes).  A core does
not say which mappings are shared, but each shared one is backed by a file
(shared anonymous memory by a deleted shmem file, ``/dev/zero (deleted)``), so
the core's NT_FILE note lists it.  A writable file mapping that is none of the
traced modules' files is taken for a shared one: a private one (a data file
mapped for writing) is taken too, which loses its values but never shows a
wrong one.  So is a read-only mapping the core holds no byte of and no file
backs: the kernel's [vvar] page, whose clock data changes under the vdso's
loads (kernels and our recorder dump none of it), and guard pages nothing reads.

The kernel writes one more area behind a thread's back: its rseq area (glibc
2.35 on registers one for every thread, ``__rseq_size`` bytes at the thread
pointer plus ``__rseq_offset``), whose CPU numbers it rewrites whenever the
thread is preempted or moves to another CPU (``sched_getcpu`` reads them).
"""

import os

from ..elf_info import ElfInfo, NotAnElfError

_RSEQ_SYMBOLS = ("__rseq_offset", "__rseq_size")
_RSEQ_AREA = 32  # struct rseq: what the kernel may write, whatever __rseq_size says


def shared_spans(cores, module_paths):
    """``[(low, high)]``, sorted and disjoint: the memory of the writable file mappings that ``cores`` (CoreFiles,
    None skipped) list and no module file of ``module_paths`` backs."""
    modules = {_file_name(path) for path in module_paths if path}
    spans = []
    for core in cores:
        for mapped in core.mapped_files if core is not None else ():
            writable = any(low < mapped.end and mapped.start < high for low, high in core.writable)
            if writable and _file_name(mapped.path) not in modules:
                spans.append((mapped.start, mapped.end))
        for low, high in core.unheld if core is not None else ():
            if not any(low < mapped.end and mapped.start < high for mapped in core.mapped_files):
                spans.append((low, high))
    return disjoint(spans)


def disjoint(spans):
    """``[(low, high)]`` sorted, the overlapping and touching ones joined."""
    joined = []
    for low, high in sorted(spans):
        if joined and low <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], high))
        else:
            joined.append((low, high))
    return joined


def _file_name(path):
    """A file's name, without the " (deleted)" the kernel adds to one deleted since it was mapped (a module
    rebuilt while the program ran is still that module)."""
    return os.path.basename(str(path).removesuffix(" (deleted)"))


def rseq_areas(modules, read, thread_pointers):
    """``[(low, high)]``: the rseq area of each thread whose thread pointer (fs_base) is in ``thread_pointers``,
    where a module of ``modules`` ((file path, load address) pairs) defines ``__rseq_offset`` and ``__rseq_size``
    and ``read(address, size)`` (a known state's memory) gives their values; none where rseq is not registered."""
    for path, load_address in modules:
        try:
            elf = ElfInfo.read(path)
            symbols = elf.data_symbols(_RSEQ_SYMBOLS)
        except (OSError, NotAnElfError):
            continue
        if len(symbols) < len(_RSEQ_SYMBOLS):
            continue
        bias = elf.load_bias(load_address)
        offset, size = read(symbols["__rseq_offset"] + bias, 8), read(symbols["__rseq_size"] + bias, 4)
        if len(offset) < 8 or len(size) < 4 or not int.from_bytes(size, "little"):
            return []
        offset = int.from_bytes(offset, "little", signed=True)
        return disjoint((pointer + offset, pointer + offset + _RSEQ_AREA) for pointer in thread_pointers if pointer)
    return []
