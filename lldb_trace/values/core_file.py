"""ELF core files read: the threads' registers, the signal, the mapped files and the memory a core holds.

A core is the known state at the end of a trace.  pyelftools reads the ELF
and program headers; the notes are walked here within the note segment's
bytes (already checked against the file's size), so a damaged note cannot
make anything read or allocate what it claims.  The file is mapped, not read
(sources/mapped_file.py): cores run to hundreds of MB and a read touches only
the pages it reads.
"""

import struct
from bisect import bisect_right
from dataclasses import dataclass, replace
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.structs import ELFStructs

from ..bundle.file_checks import not_a_regular_file, path_problem, shown_path
from ..capture.ptrace_recorder.ptrace import FPREGS_SIZE, USER_REGS
from ..elf_info import PARSE_FAILURES
from ..errors import LldbTraceError
from ..sources.held_file import HeldFile
from .machine_state import TRACKED, MachineState

NT_PRSTATUS, NT_FPREGSET, NT_PRPSINFO, NT_SIGINFO, NT_FILE = 1, 2, 3, 0x53494749, 0x46494C45
_PF_X, _PF_W = 1, 2  # a PT_LOAD of an executable, of a writable mapping
NT_X86_XSTATE, XSTATE_XCR0_AT = 0x202, 464  # the XSAVE area; Linux puts XCR0 in its software-reserved bytes
NT_GNU_BUILD_ID = 3
_PRSTATUS_SIZE = 336  # struct elf_prstatus on x86-64
_PRSTATUS_REGS = 112  # where pr_reg (struct user_regs_struct) starts in it
_PRPSINFO_PID = 24  # where pr_pid is in struct elf_prpsinfo
_SIGINFO_SIZE = 128
_FAULT_SIGNALS = {4, 5, 7, 8, 11}  # SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV: si_addr is the faulting address
_ELF_HEADER_SIZE = 64
_EI_CLASS, _EI_DATA, _ELFCLASS64, _ELFDATA2LSB = 4, 5, 2, 1  # e_ident: the word size and the byte order
_PROCESS_NOTES = (b"CORE", b"LINUX")  # the names of the notes that describe a process
_PHDR_SIZE = 56
_MOST_PHDRS = 256  # an image's program headers are a handful; more is not an image's header
_MOST_NOTE_BYTES = 1 << 16  # a build-id note segment is tens of bytes


_PAGE = 4096


class CoreFileError(LldbTraceError):
    """The core file cannot be used; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class CoreThread:
    """One thread of the core: ``signal`` is pr_cursig (0: none); ``registers`` by struct user_regs_struct's names
    plus ``rflags`` (= eflags); ``fpregs`` the 512-byte FXSAVE area of NT_FPREGSET, or None; ``xcr0`` the state
    components enabled, from NT_X86_XSTATE, or None; ``xstate`` that note's XSAVE area (the AVX and AVX-512
    registers' upper parts), or None."""

    tid: int
    signal: int
    registers: dict[str, int]
    fpregs: bytes | None = None
    xcr0: int | None = None
    xstate: bytes | None = None


@dataclass(frozen=True)
class SignalInfo:
    """NT_SIGINFO: the signal that made the core, its si_code, and the faulting address (None for other signals)."""

    signo: int
    code: int
    fault_address: int | None


@dataclass(frozen=True)
class MappedFile:
    """An NT_FILE entry: ``path`` mapped at ``start``..``end`` from byte ``offset`` of the file."""

    start: int
    end: int
    offset: int
    path: str


@dataclass(frozen=True)
class _Load:
    vaddr: int
    held: int  # p_filesz: the bytes the core holds from vaddr on
    offset: int


class CoreFile:
    """An opened core (see :func:`open_core`): ``path``, ``pid``, ``threads`` (in the core's order), ``siginfo``,
    ``mapped_files``, ``mapped`` (every mapping's [(start, end)], dumped or not), ``unheld`` (the read-only data
    ones it holds no byte of: [vvar], guard pages, files' unchanged pages); ``read`` and ``build_id_at`` read the
    memory it holds, ``state`` gives a MachineState."""

    def __init__(self, path, pid, threads, siginfo, mapped_files, loads, data, mappings=()):
        self.path = path
        self.pid = pid
        self.threads = threads
        self.siginfo = siginfo
        self.mapped_files = mapped_files
        # ``mappings``: every PT_LOAD's (start, end, bytes held, flags)
        self.mapped = [(low, high) for low, high, _, _ in mappings]  # every mapping's, held or not
        self.unheld = [  # nor code
            (low, high)
            for low, high, held, flags in mappings
            if not held and not flags & (_PF_W | _PF_X) and high > low
        ]
        self._loads = sorted(loads, key=lambda load: load.vaddr)
        self._starts = [load.vaddr for load in self._loads]
        self._data = data

    def thread(self, tid):
        """The CoreThread ``tid``, or None when the core has no such thread."""
        return next((thread for thread in self.threads if thread.tid == tid), None)

    def read(self, address, size):
        """The bytes the core holds from ``address`` on, at most ``size``: it stops at the first byte it lacks."""
        found = bytearray()
        while len(found) < size:
            k = bisect_right(self._starts, address) - 1
            if k < 0 or address >= self._loads[k].vaddr + self._loads[k].held:
                break
            load = self._loads[k]
            first = load.offset + address - load.vaddr
            piece = self._data[first : first + min(size - len(found), load.vaddr + load.held - address)]
            if not piece:  # the file changed since it was opened (HeldFile): nothing more is known of it
                break
            found += piece
            address += len(piece)
        return bytes(found)

    def held_spans(self):
        """``[(address, size)]`` of the memory the core holds bytes of."""
        return [(load.vaddr, load.held) for load in self._loads]

    def build_id_at(self, load_address):
        """The GNU build-id (hex) of the ELF image whose header the core holds at ``load_address``, else None."""
        structs = ELFStructs(little_endian=True, elfclass=64)
        structs.create_basic_structs()
        header_bytes = self.read(load_address, _ELF_HEADER_SIZE)
        if len(header_bytes) < _ELF_HEADER_SIZE or header_bytes[:4] != b"\x7fELF" or header_bytes[4] != 2:
            return None
        header = structs.Elf_Ehdr.parse(header_bytes)
        count = header["e_phnum"]
        if header["e_phentsize"] != _PHDR_SIZE or not 0 < count <= _MOST_PHDRS:
            return None
        table = self.read(load_address + header["e_phoff"], count * _PHDR_SIZE)
        if len(table) < count * _PHDR_SIZE:
            return None
        structs.create_advanced_structs(header["e_type"], header["e_machine"], header["e_ident"]["EI_OSABI"])
        phdrs = [structs.Elf_Phdr.parse(table[k * _PHDR_SIZE : (k + 1) * _PHDR_SIZE]) for k in range(count)]
        loads = [p["p_vaddr"] for p in phdrs if p["p_type"] == "PT_LOAD"]
        bias = load_address - (min(loads, default=0) & ~0xFFF)
        for phdr in phdrs:
            if phdr["p_type"] == "PT_NOTE" and phdr["p_filesz"] <= _MOST_NOTE_BYTES:
                notes = self.read(phdr["p_vaddr"] + bias, phdr["p_filesz"])
                for kind, name, desc in iter_notes(notes):
                    if kind == NT_GNU_BUILD_ID and name == b"GNU":
                        return desc.hex()
        return None

    def state(self, tid):
        """The MachineState of thread ``tid``: its TRACKED registers, and the core's memory."""
        thread = self.thread(tid)
        if thread is None:
            raise CoreFileError(f"{self.path}: the core has no thread {tid} (its threads: {self._tids()})")
        return MachineState({name: thread.registers[name] for name in TRACKED}, self.read, thread.xcr0)

    def _tids(self):
        return ", ".join(str(thread.tid) for thread in self.threads) or "none"

    def __repr__(self):
        return f"<CoreFile {self.path}: pid {self.pid}, threads {self._tids()}>"


def iter_notes(data):
    """``(type, name, descriptor)`` of the ELF notes in ``data``, up to the first that runs past its end."""
    return _walk_notes(data)[0]


def _walk_notes(data, names=None):
    """``([(type, name, descriptor)], where the walk stopped)``: notes are 4-byte aligned 12-byte headers, a name
    and a descriptor; with ``names``, only the notes of those names are kept (a damaged segment may hold millions
    of empty ones)."""
    notes, offset = [], 0
    while offset + 12 <= len(data):
        name_size, desc_size, kind = struct.unpack_from("<III", data, offset)
        desc_at = offset + 12 + (name_size + 3) // 4 * 4
        if desc_at + desc_size > len(data):
            break
        name = bytes(data[offset + 12 : offset + 12 + name_size]).rstrip(b"\0")
        if names is None or name in names:
            notes.append((kind, name, bytes(data[desc_at : desc_at + desc_size])))
        offset = desc_at + (desc_size + 3) // 4 * 4
    return notes, offset


def open_core(path):
    """The CoreFile at ``path``; a CoreFileError naming the file says why one cannot be used."""
    path = Path(path).expanduser().absolute()
    data = _mapped(path)
    ident = bytes(data[:_ELF_HEADER_SIZE])
    if ident[_EI_CLASS] != _ELFCLASS64 or ident[_EI_DATA] != _ELFDATA2LSB:
        layout = {1: "32-bit", 2: "64-bit"}.get(ident[_EI_CLASS], "unknown-class")
        order = {1: "little-endian", 2: "big-endian"}.get(ident[_EI_DATA], "unknown-byte-order")
        raise CoreFileError(
            f"{path} is a {layout} {order} ELF file: only x86-64 cores (64-bit, little-endian) go with a trace"
        )
    try:
        with open(path, "rb") as file:
            elf = ELFFile(file)
            machine, kind = elf["e_machine"], elf["e_type"]
            segments = [
                (s["p_type"], s["p_offset"], s["p_filesz"], s["p_vaddr"], s["p_memsz"], s["p_flags"])
                for s in elf.iter_segments()
            ]
    except (*PARSE_FAILURES, OSError) as error:  # OSError: a header offset past any file (seek)
        what = "a damaged ELF file" if bytes(data[:4]) == b"\x7fELF" else "not an ELF file"
        raise CoreFileError(f"{path} is {what} ({error}): give an ELF core file (gcore, or a crash's core)") from None
    if kind != "ET_CORE":
        raise CoreFileError(f"{path} is an ELF file of type {kind}, not a core (ET_CORE): give the process's core file")
    if machine != "EM_X86_64":
        raise CoreFileError(f"{path} is a core of an {machine} process: only x86-64 cores go with a trace")
    for number, (_type, offset, size, *_) in enumerate(segments):
        if _type in ("PT_LOAD", "PT_NOTE") and offset + size > len(data):
            raise CoreFileError(
                f"{path} is truncated: its segment {number} ({_type}) claims {size} bytes at offset {offset:#x}, "
                f"past the end of the file ({len(data)} bytes); was the core cut short (ulimit -c)?"
            )
    _check_loads(path, [(vaddr, memory) for kind, _, _, vaddr, memory, _ in segments if kind == "PT_LOAD"])
    notes = [
        note for _type, offset, size, *_ in segments if _type == "PT_NOTE" for note in _notes(path, data, offset, size)
    ]
    loads = [_Load(vaddr, size, offset) for _type, offset, size, vaddr, *_ in segments if _type == "PT_LOAD" and size]
    mappings = [
        (vaddr, vaddr + memory, held, flags) for kind, _, held, vaddr, memory, flags in segments if kind == "PT_LOAD"
    ]
    return _build(path, notes, loads, data, mappings)


def _check_loads(path, loads):
    """A process's memory is mapped in pages, each once, within 64 bits: a segment that is not says the core is
    damaged (one shifted by 8 bytes showed every byte of it at the wrong address)."""
    spans = sorted((vaddr, vaddr + size) for vaddr, size in loads)
    for number, (low, high) in enumerate(spans):
        if low % _PAGE or high > 1 << 64 or (number and low < spans[number - 1][1]):
            raise CoreFileError(
                f"{path} is damaged: its memory segment at {low:#x} ({high - low} bytes) does not start on a page, "
                "overlaps another or passes 64-bit addresses: give the core as the kernel or gcore wrote it"
            )


def _mapped(path):
    problem = path_problem(path)
    if problem == "does not exist":
        raise CoreFileError(f"{shown_path(path)}: no such core file: fix the path")
    if problem is not None:
        raise CoreFileError(f"{shown_path(path)} {problem}")
    try:
        kind = not_a_regular_file(path)
        if kind:
            raise CoreFileError(f"{path} is {kind}, not a core file: give the core's path")
        data = HeldFile(path)
    except FileNotFoundError:
        raise CoreFileError(f"{path}: no such core file: fix the path") from None
    except PermissionError:
        raise CoreFileError(f"{path}: permission denied: make the core file readable (chmod +r)") from None
    except OSError as error:
        raise CoreFileError(f"{path}: cannot read the core file: {error.strerror}") from None
    if len(data) < _ELF_HEADER_SIZE or bytes(data[:4]) != b"\x7fELF":
        raise CoreFileError(f"{path} is not an ELF file ({len(data)} bytes): give an ELF core file")
    return data


def _notes(path, data, offset, size):
    """The notes of one PT_NOTE segment; a note cut short by the segment's end is the damage it is."""
    notes, stopped = _walk_notes(data[offset : offset + size], _PROCESS_NOTES)
    if size - stopped >= 12:
        raise CoreFileError(
            f"{path}: its notes are truncated (the note at offset {offset + stopped:#x} runs past the end of its "
            f"segment, {size} bytes at {offset:#x}): the core is damaged"
        )
    return notes


def _build(path, notes, loads, data, mappings):
    threads, current, pid, siginfo, mapped = [], None, None, None, ()
    for kind, _, desc in notes:
        if kind == NT_PRSTATUS:
            current = _thread(path, desc)
            if any(thread.tid == current.tid for thread in threads):
                raise CoreFileError(f"{path}: two NT_PRSTATUS notes describe thread {current.tid}: the core is damaged")
            threads.append(current)
        elif kind == NT_FPREGSET and current is not None and len(desc) >= FPREGS_SIZE:
            threads[-1] = current = replace(current, fpregs=desc[:FPREGS_SIZE])
        elif kind == NT_X86_XSTATE and current is not None and len(desc) >= XSTATE_XCR0_AT + 8:
            xcr0 = struct.unpack_from("<Q", desc, XSTATE_XCR0_AT)[0]
            threads[-1] = current = replace(current, xcr0=xcr0, xstate=desc)
        elif kind == NT_PRPSINFO and len(desc) >= _PRPSINFO_PID + 4:
            pid = struct.unpack_from("<i", desc, _PRPSINFO_PID)[0]
        elif kind == NT_SIGINFO and siginfo is None and len(desc) >= _SIGINFO_SIZE:
            siginfo = _siginfo(desc)
        elif kind == NT_FILE:
            mapped = _mapped_files(path, desc)
    if not threads:
        raise CoreFileError(f"{path}: the core has no thread (no NT_PRSTATUS note): it is damaged or not a process's")
    return CoreFile(path, pid or threads[0].tid, tuple(threads), siginfo, mapped, loads, data, mappings)


def _thread(path, desc):
    if len(desc) < _PRSTATUS_SIZE:
        raise CoreFileError(
            f"{path}: an NT_PRSTATUS note holds {len(desc)} bytes, not the {_PRSTATUS_SIZE} of an x86-64 thread's"
        )
    signal = struct.unpack_from("<h", desc, 12)[0]
    tid = struct.unpack_from("<i", desc, 32)[0]
    values = struct.unpack_from(f"<{len(USER_REGS)}Q", desc, _PRSTATUS_REGS)
    registers = dict(zip(USER_REGS, values, strict=True))
    registers["rflags"] = registers["eflags"]
    return CoreThread(tid, signal, registers)


def _siginfo(desc):
    signo, _errno, code = struct.unpack_from("<iii", desc, 0)
    fault = struct.unpack_from("<Q", desc, 16)[0] if signo in _FAULT_SIGNALS and code > 0 else None
    return SignalInfo(signo, code, fault)


def _mapped_files(path, desc):
    if len(desc) < 16:
        raise CoreFileError(f"{path}: its NT_FILE note is truncated ({len(desc)} bytes)")
    count, page_size = struct.unpack_from("<QQ", desc, 0)
    names = desc[16 + 24 * count :].split(b"\0") if 16 + 24 * count <= len(desc) else []
    if len(names) < count:
        raise CoreFileError(f"{path}: its NT_FILE note is truncated: it names {count} mappings but holds fewer")
    entries = (struct.unpack_from("<QQQ", desc, 16 + 24 * k) for k in range(count))
    return tuple(
        MappedFile(start, end, offset * page_size, name.decode(errors="surrogateescape"))
        for (start, end, offset), name in zip(entries, names, strict=False)
    )
