"""Core files for the tests: GDB's gcore of a program stopped where its recording ends, given the recording's pid.

``lldb-trace record`` and GDB both run a program with ASLR off, so at the same stopping point (a crash, a
breakpoint at the address ``record --until`` stops at) the pc, the modules and their build-ids are the same.
Only the pid differs: ``set_core_pid`` writes the recording's pid over the core's (its NT_PRPSINFO and its
only thread's NT_PRSTATUS), which makes it the core that recording would have taken.
"""

import struct
import subprocess

from lldb_trace.values.core_file import NT_PRPSINFO, NT_PRSTATUS

_PID_FIELD = {NT_PRPSINFO: 24, NT_PRSTATUS: 32}  # where pr_pid is in each note's descriptor


def take_core(program, core, stop_at=None):
    """Run ``program`` under GDB until it crashes (or reaches the address of function ``stop_at``), gcore there."""
    breakpoint = ["-ex", f"break *{stop_at}"] if stop_at else []
    command = ["gdb", "-nx", "-batch", *breakpoint, "-ex", "run", "-ex", f"gcore {core}", str(program)]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return core


def set_core_pid(core, pid):
    """Make the one-thread ``core`` a core of process ``pid`` (its thread ``pid``)."""
    data = bytearray(core.read_bytes())
    phoff, _shoff, _flags, _ehsize, phentsize, phnum = struct.unpack_from("<QQIHHH", data, 32)
    for k in range(phnum):
        kind, _flags, offset, _vaddr, _paddr, size = struct.unpack_from("<IIQQQQ", data, phoff + k * phentsize)
        if kind == 4:  # PT_NOTE
            _patch_notes(data, offset, offset + size, pid)
    core.write_bytes(bytes(data))


def _patch_notes(data, at, end, pid):
    while at + 12 <= end:
        name_size, desc_size, kind = struct.unpack_from("<III", data, at)
        desc = at + 12 + (name_size + 3) // 4 * 4
        if kind in _PID_FIELD and data[at + 12 : at + 16] == b"CORE":
            struct.pack_into("<i", data, desc + _PID_FIELD[kind], pid)
        at = desc + (desc_size + 3) // 4 * 4
