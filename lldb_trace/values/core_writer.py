"""ELF core files (ET_CORE, x86-64 Linux) written from a snapshot of a stopped process.

The recorder and ``trace save`` keep the state where a trace ends (and where recording started) as a
core that LLDB (``target create --core``), GDB and ``values.core_file`` all read, so one known state has
one format.  The layout is the kernel's: a PT_NOTE segment (per thread NT_PRSTATUS and NT_FPREGSET, the
first thread's followed by NT_PRPSINFO, NT_SIGINFO, NT_AUXV and NT_FILE), then one PT_LOAD per mapping.
Which bytes are dumped follows the kernel's default coredump_filter: writable or anonymous mappings in
full, and file-backed ones the process wrote to (copy-on-write pages: the RELRO part of .data, where
ld.so wrote the link map GDB and LLDB find the libraries by); any other file-backed mapping only its
first page when it holds an ELF header (the build-id is there; the rest is in the file); nothing of
[vvar] or of an unreadable mapping (p_filesz 0).  The file is written
under a temporary name and renamed, so a failure leaves nothing behind.
"""

import contextlib
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..capture.ptrace_recorder.ptrace import USER_REGS  # struct user_regs_struct: NT_PRSTATUS's pr_reg
from ..errors import LldbTraceError

PAGE = 4096
NT_PRSTATUS, NT_FPREGSET, NT_PRPSINFO, NT_AUXV, NT_X86_XSTATE = 1, 2, 3, 6, 0x202
NT_SIGINFO, NT_FILE = 0x53494749, 0x46494C45
PT_LOAD, PT_NOTE = 1, 4
_PRSTATUS_SIZE, _PRPSINFO_SIZE, _FPREGS_SIZE, _SIGINFO_SIZE = 336, 136, 512, 128
_NOT_DUMPED = ("[vvar]", "[vvar_vclock]")
_CHUNK = 1 << 20


class CoreWriteError(LldbTraceError):
    """The core file cannot be written."""


@dataclass(frozen=True)
class CoreThread:
    """One thread: ``registers`` by USER_REGS name (as ptrace.get_regs gives them; missing ones are 0),
    ``fpregs`` the 512-byte FXSAVE area (None: no NT_FPREGSET), ``signal`` the pending signal (0: none),
    ``siginfo`` its 128-byte siginfo_t (None: made from ``signal`` alone), ``xstate`` its XSAVE area as
    PTRACE_GETREGSET gives it (None: no NT_X86_XSTATE)."""

    tid: int
    registers: dict
    fpregs: bytes | None = None
    signal: int = 0
    siginfo: bytes | None = None
    xstate: bytes | None = None


@dataclass(frozen=True)
class CoreRegion:
    """One mapping, as /proc/PID/maps lists it (``permissions`` like "rw-p"; ``path`` "" when anonymous);
    ``modified``: whether the process wrote to its pages (None: not known, dumped as if so)."""

    start: int
    end: int
    permissions: str
    path: str = ""
    offset: int = 0
    modified: bool | None = None


@dataclass(frozen=True)
class CoreSnapshot:
    """A stopped process: its threads (the signalled one first), mappings, auxv and command line;
    ``read_memory(address, size)`` returns up to ``size`` bytes (shorter or empty where unreadable)."""

    pid: int
    threads: Sequence[CoreThread]
    regions: Sequence[CoreRegion]
    read_memory: Callable[[int, int], bytes]
    auxv: bytes = b""
    program: str = ""
    args: Sequence[str] = ()
    ppid: int = 0


def write_core(snapshot, path):
    """Write ``snapshot`` as an ELF core at ``path`` (atomically); returns ``path``."""
    path = os.fspath(path)
    temporary = f"{path}.partial-{os.getpid()}"
    try:
        with open(temporary, "wb") as out:
            dump_core(snapshot, out)
        os.replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        raise CoreWriteError(f"cannot write the core file {path}: {error.strerror}") from None
    except BaseException:
        _remove(temporary)
        raise
    return path


def dumped_size(region, read_memory):
    """How many bytes of ``region`` the core holds (see the module docstring)."""
    if "r" not in region.permissions or region.path in _NOT_DUMPED:
        return 0
    if "w" in region.permissions or not region.path.startswith("/") or region.modified is not False:
        return region.end - region.start
    if region.offset == 0 and read_memory(region.start, 4) == b"\x7fELF":
        return min(PAGE, region.end - region.start)
    return 0


def dump_core(snapshot, out):
    """Write ``snapshot`` as an ELF core into the binary file ``out``, from its start."""
    notes = _notes(snapshot)
    sizes = [dumped_size(region, snapshot.read_memory) for region in snapshot.regions]
    count = 1 + len(snapshot.regions)
    notes_offset = 64 + 56 * count
    offset = _align(notes_offset + len(notes), PAGE)
    headers = [struct.pack("<IIQQQQQQ", PT_NOTE, 0, notes_offset, 0, 0, len(notes), 0, 4)]
    for region, size in zip(snapshot.regions, sizes, strict=True):
        flags = ("r" in region.permissions) << 2 | ("w" in region.permissions) << 1 | ("x" in region.permissions)
        memory_size = region.end - region.start
        headers.append(struct.pack("<IIQQQQQQ", PT_LOAD, flags, offset, region.start, 0, size, memory_size, PAGE))
        offset += size
    elf_header = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    elf_header += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, count, 64, 0, 0)
    out.write(elf_header + b"".join(headers) + notes)
    out.write(bytes(_align(out.tell(), PAGE) - out.tell()))
    for region, size in zip(snapshot.regions, sizes, strict=True):
        _write_memory(out, region.start, size, snapshot.read_memory)


def _write_memory(out, start, size, read_memory):
    """``size`` bytes from ``start``; pages that cannot be read are zeros, as the kernel leaves them."""
    address, end = start, start + size
    while address < end:
        wanted = min(_CHUNK, end - address)
        data = read_memory(address, wanted)
        if len(data) < wanted:  # read what can be read page by page
            data = b"".join(
                _page(read_memory, page, min(PAGE, end - page)) for page in range(address, address + wanted, PAGE)
            )
        out.write(data)
        address += wanted


def _page(read_memory, address, size):
    data = read_memory(address, size)
    return data if len(data) == size else bytes(size)


def _notes(snapshot):
    if not snapshot.threads:
        raise CoreWriteError("a core file needs at least one thread")
    notes = []
    for index, thread in enumerate(snapshot.threads):
        notes.append(_note(NT_PRSTATUS, _prstatus(snapshot, thread)))
        if index == 0:
            notes.append(_note(NT_PRPSINFO, _prpsinfo(snapshot)))
            if thread.signal:
                notes.append(_note(NT_SIGINFO, _siginfo(thread)))
            if snapshot.auxv:
                notes.append(_note(NT_AUXV, snapshot.auxv))
            notes.append(_note(NT_FILE, _file_note(snapshot.regions)))
        if thread.fpregs is not None:
            notes.append(_note(NT_FPREGSET, bytes(thread.fpregs[:_FPREGS_SIZE]).ljust(_FPREGS_SIZE, b"\0")))
        if thread.xstate:
            notes.append(_note(NT_X86_XSTATE, bytes(thread.xstate)))
    return b"".join(notes)


def _note(kind, description, name=b"CORE\0"):
    header = struct.pack("<III", len(name), len(description), kind)
    return header + name.ljust(_align(len(name), 4), b"\0") + description.ljust(_align(len(description), 4), b"\0")


def _prstatus(snapshot, thread):
    registers = struct.pack(f"<{len(USER_REGS)}Q", *(thread.registers.get(n, 0) & (1 << 64) - 1 for n in USER_REGS))
    code = struct.unpack_from("<i", thread.siginfo, 8)[0] if thread.siginfo else 0
    head = struct.pack("<iiih2xQQiiii", thread.signal, code, 0, thread.signal, 0, 0, thread.tid, snapshot.ppid, 0, 0)
    times = bytes(64)  # user, system and children's times: not known
    status = head + times + registers + struct.pack("<i", thread.fpregs is not None)
    return status.ljust(_PRSTATUS_SIZE, b"\0")


def _prpsinfo(snapshot):
    name = os.path.basename(snapshot.program).encode()[:15]
    arguments = " ".join([snapshot.program, *snapshot.args]).encode()[:79]
    info = struct.pack("<bcbb4xQIIiiii", 0, b"R", 0, 0, 0, os.getuid(), os.getgid(), snapshot.pid, snapshot.ppid, 0, 0)
    return (info + name.ljust(16, b"\0") + arguments.ljust(80, b"\0")).ljust(_PRPSINFO_SIZE, b"\0")


def _siginfo(thread):
    if thread.siginfo is not None:
        return bytes(thread.siginfo[:_SIGINFO_SIZE]).ljust(_SIGINFO_SIZE, b"\0")
    return struct.pack("<iii", thread.signal, 0, 0).ljust(_SIGINFO_SIZE, b"\0")


def _file_note(regions):
    """NT_FILE, as the kernel writes it: every mapping of a file, "anon_inode:[io_uring]" too (not [heap], [vdso])."""
    files = [region for region in regions if region.path and not region.path.startswith("[")]
    body = struct.pack("<QQ", len(files), PAGE)
    body += b"".join(struct.pack("<QQQ", r.start, r.end, r.offset // PAGE) for r in files)
    return body + b"".join(r.path.encode() + b"\0" for r in files)


def _align(value, alignment):
    return (value + alignment - 1) // alignment * alignment


def _remove(path):
    with contextlib.suppress(OSError):
        os.remove(path)
