"""What must hold before a program is recorded: it exists, it can run, it is an x86-64 ELF executable."""

import os
import shutil

from ...elf_info import ElfInfo
from ...errors import LldbTraceError


class RecordError(LldbTraceError):
    """The program cannot be recorded as asked."""


def resolve_program(program):
    """The absolute path of an x86-64 ELF executable and its ElfInfo, or a one-line error."""
    path = program if "/" in program else shutil.which(program)
    if not path and os.path.exists(program):  # as a shell, a name without a slash is looked for in PATH only
        raise RecordError(f"program not found in PATH: {program} (give ./{program} for the one here)")
    if not path or not os.path.exists(path):
        raise RecordError(f"program not found: {program}")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise RecordError(f"{path} is not an executable file")
    info = ElfInfo(path)
    info.require_x86_64()
    return os.path.abspath(path), info
