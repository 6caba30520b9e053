"""Memory another process may write while the traced thread runs: the shared mappings, as a core lists them.

A ``MAP_SHARED`` mapping (shared anonymous memory, a memfd, POSIX or System V
shared memory, a file mapped shared) can change between any two instructions
of the traced thread: another process writes it, or this one does through
another mapping of the same memory or a ``write`` to the file.  So nothing the
trace shows of it carries from one position to another (generations.py:
*volatile* bytes).  A core does not say which mappings are shared, but each
shared one is backed by a file (shared anonymous memory by a deleted shmem
file, ``/dev/zero (deleted)``), so the core's NT_FILE note lists it.  Every
file mapping that is not a traced module's own (its file, within its load
span) is taken for a shared one, whatever its permissions: one this process
maps read-only another may write, and a private one's pages follow the file
until first written.  A private data file's values are lost so, never shown
wrong.  So is a read-only mapping the core holds no byte of and no file backs:
the kernel's [vvar] page, whose clock data changes under the vdso's loads
(kernels and our recorder dump none of it), and guard pages nothing reads.
Memory no mapping of the end core holds was unmapped before the end (or
never mapped): it may have been a shared mapping meanwhile, so it is taken
for one too.

The kernel writes one more area behind a thread's back: its rseq area (glibc
2.35 on registers one for every thread, ``__rseq_size`` bytes at the thread
pointer plus ``__rseq_offset``), whose CPU numbers it rewrites whenever the
thread is preempted or moves to another CPU (``sched_getcpu`` reads them).  A
program that turns glibc's off may register its own: the ``rseq`` call in the
trace names it, where its address is known.
"""

import os

from ..elf_info import ElfInfo, NotAnElfError

_RSEQ_SYMBOLS = ("__rseq_offset", "__rseq_size")
_RSEQ_AREA = 32  # struct rseq: what the kernel may write, whatever __rseq_size says
_RSEQ = 334  # the system call that registers one
_PAGE = 4096
_TOP = 1 << 64


def shared_spans(cores, modules, end=None):
    """``[(low, high)]``, sorted and disjoint: the memory of the file mappings that ``cores`` (CoreFiles, None
    skipped) list and that are none of ``modules``' ([(file paths, load address, size)]), the read-only ones
    they hold nothing of and no file backs, and the memory no mapping of the ``end`` core holds."""
    spans = []
    for core in cores:
        for mapped in core.mapped_files if core is not None else ():
            if not _module_mapping(mapped.path, mapped.start, mapped.end, modules):
                spans.append((mapped.start, mapped.end))
        for low, high in core.unheld if core is not None else ():
            if not any(low < mapped.end and mapped.start < high for mapped in core.mapped_files):
                spans.append((low, high))
    if end is not None:
        spans += unmapped(end.mapped)
    return disjoint(spans)


def live_shared_spans(mappings, modules):
    """The same for a live process's mappings ([(start, end, path, perms)], /proc/PID/maps): its shared ones,
    the file mappings no module backs, and the memory none holds."""
    spans = [
        (start, end)
        for start, end, path, perms in mappings
        if "s" in perms or (path.startswith("/") and not _module_mapping(path, start, end, modules))
    ]
    return disjoint([*spans, *unmapped([(start, end) for start, end, *_ in mappings])])


def unmapped(mapped):
    """The gaps between the ``mapped`` spans, over the whole address space."""
    gaps, last = [], 0
    for low, high in disjoint(mapped):
        if low > last:
            gaps.append((last, low))
        last = max(last, high)
    return [*gaps, (last, _TOP)] if last < _TOP else gaps


def _module_mapping(path, start, end, modules):
    """Whether ``[start, end)``, a mapping of the file at ``path``, is a traced module's: the same file name (a
    bundle's copy, or /lib for /usr/lib), within the module's load span."""
    name = _file_name(path)
    for paths, load_address, size in modules:
        high = load_address + -(-size // _PAGE) * _PAGE
        if load_address <= start and end <= high and any(other and _file_name(other) == name for other in paths):
            return True
    return False


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


def registered_rseq_areas(calls):
    """``[(low, high)]``: the areas the calls ``[(number, rdi)]`` register as rseq areas (a program's own, where
    glibc's is turned off), where rdi is known."""
    return [(area, area + _RSEQ_AREA) for number, area in calls if number == _RSEQ and area is not None and area]


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
