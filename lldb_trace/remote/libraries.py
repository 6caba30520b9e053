"""Where the traced process's modules were: the executable, the SVR4 library list and the auxiliary vector.

A debugger over gdb-remote learns the modules as it does from gdbserver:
``qXfer:exec-file:read`` names the program; ``qXfer:libraries-svr4:read``
lists the shared libraries with their load bias (``l_addr``) and dynamic
section (``l_ld``); ``qXfer:auxv:read`` gives the program's entry and
program headers, from which GDB finds where a position-independent program
was loaded.  The first module of a bundle's process is its program (as the
plugin makes it the LLDB target's executable).  ``lm`` addresses are made
up (the trace holds no link map): GDB only tells libraries apart by them.
"""

from __future__ import annotations

import shlex
import struct
from xml.sax.saxutils import quoteattr

from ..elf_info import ElfInfo, NotAnElfError

AT_NULL, AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_BASE, AT_ENTRY = 0, 3, 4, 5, 6, 7, 9
_LINK_MAP_BASE = 0x1000  # the made-up link map entries: one small address per library


def _info(module) -> ElfInfo | None:
    try:
        return ElfInfo.read(module.path)
    except (OSError, NotAnElfError):
        return None


def _bias(module) -> int:
    """Where the module ran less its file addresses (its load address where the file cannot be read)."""
    info = _info(module)
    return info.load_bias(module.load_address) if info else module.load_address


def exec_file(process) -> str:
    """The program's path as it ran ("" when the trace names no module)."""
    return process.modules[0].system_path if process.modules else ""


def served_files(process) -> dict:
    """The files a client may read (``vFile``): each module's path as it ran, and the program's name for its
    dynamic linker (``/lib64/ld-linux-x86-64.so.2``) where the trace names that linker by its real path."""
    files = {module.system_path: module.path for module in process.modules}
    info = _info(process.modules[0]) if process.modules else None
    if info is not None and info.interpreter and info.interpreter not in files:
        name = info.interpreter.rsplit("/", 1)[-1]
        linker = next((m for m in process.modules[1:] if m.system_path.rsplit("/", 1)[-1] == name), None)
        if linker is not None:
            files[info.interpreter] = linker.path
    return files


def svr4_library_list(process) -> str:
    """The ``library-list-svr4`` document of every module but the program."""
    lines = ['<library-list-svr4 version="1.0">']
    for number, module in enumerate(process.modules[1:], start=1):
        info, bias = _info(module), _bias(module)
        dynamic = bias + info.dynamic_vaddr if info and info.dynamic_vaddr is not None else 0
        lines.append(
            f'  <library name={quoteattr(module.system_path)} lm="{_LINK_MAP_BASE * number:#x}"'
            f' l_addr="{bias:#x}" l_ld="{dynamic:#x}" lmid="0x0"/>'
        )
    lines.append("</library-list-svr4>")
    return "\n".join(lines) + "\n"


def auxiliary_vector(process) -> bytes:
    """The entries of the program's auxiliary vector that the trace determines (empty without a program)."""
    if not process.modules:
        return b""
    program = process.modules[0]
    info = _info(program)
    if info is None:
        return b""
    bias = info.load_bias(program.load_address)
    offset, count, size = info.program_headers
    entries = [(AT_PHDR, info.first_load_vaddr + offset + bias), (AT_PHENT, size), (AT_PHNUM, count)]
    entries += [(AT_PAGESZ, 4096), (AT_ENTRY, info.entry + bias)]
    name = (info.interpreter or "/ld-linux-x86-64.so.2").rsplit("/", 1)[-1]
    interpreter = next((m for m in process.modules[1:] if m.system_path.rsplit("/", 1)[-1] == name), None)
    if interpreter is not None:
        entries.append((AT_BASE, interpreter.load_address))
    entries.append((AT_NULL, 0))
    return b"".join(struct.pack("<QQ", key, value) for key, value in entries)


def lldb_command(process, address: str) -> str:
    """The shell command that starts LLDB on the program and connects it to the server at ``address``.  LLDB takes
    no program from a server, and finds the libraries only through the dynamic linker's list in memory (runtime
    data a trace does not hold): the command adds each library where the trace says it was loaded."""
    if not process.modules:
        return f"lldb -o {shlex.quote('gdb-remote ' + address)}"
    words = ["lldb", str(process.modules[0].path)]
    for module in process.modules[1:]:
        load = f"target modules load -f {module.path} -s {_bias(module):#x}"
        words += ["-o", f"target modules add {module.path}", "-o", load]
    words += ["-o", f"gdb-remote {address}"]
    return shlex.join(words)


def thread_list(pid: int, tids: list[int], multiprocess: bool) -> str:
    """The ``threads`` document of ``qXfer:threads:read``."""
    lines = ["<threads>"]
    for tid in tids:
        name = f"p{pid:x}.{tid:x}" if multiprocess else f"{tid:x}"
        lines.append(f'  <thread id="{name}"/>')
    lines.append("</threads>")
    return "\n".join(lines) + "\n"
