"""A live process as LLDB sees it, as a core snapshot (values.core_writer): what ``trace save`` writes beside
the trace of a process traced with ``pt start``.

LLDB's own ``SBProcess.SaveCore`` writes only minidumps on Linux (pip LLDB 23 and lldb-22 alike, whatever
plugin is named), which neither GDB nor values.core_file read: the ELF core is written here.  Registers come
from each thread's frame 0 (its register sets: general purpose, and the x87/SSE set rebuilt as the FXSAVE
area of NT_FPREGSET), memory through ``SBProcess.ReadMemory``.  The mappings, their file offsets and the
auxv come from /proc when the process runs on this machine (it always does for ``pt start``); otherwise
from LLDB's memory regions, every readable one dumped in full.
"""

import os

import lldb

from ..capture.process_view import read_maps
from ..capture.ptrace_recorder.core_snapshot import modified_mappings
from ..capture.ptrace_recorder.ptrace import FPREGS_SIZE, USER_REGS
from ..values.core_writer import CoreRegion, CoreSnapshot, CoreThread
from ..values.machine_state import TRACKED, MachineState
from .live_session import read_memory

_LLDB_NAMES = {"eflags": "rflags"}
_NOT_IN_A_SYSCALL = (1 << 64) - 1  # orig_rax when the thread stopped outside a system call (LLDB does not show it)
_FX_FIELDS = (("fctrl", 0, 2), ("fstat", 2, 2), ("fop", 6, 2), ("fioff", 8, 4), ("fiseg", 12, 4))
_FX_FIELDS += (("fooff", 16, 4), ("foseg", 20, 4), ("mxcsr", 24, 4), ("mxcsrmask", 28, 4))


def live_snapshot(process):
    """The stopped live ``process`` as a CoreSnapshot, the selected thread first."""
    pid = process.GetProcessID()
    selected = process.GetSelectedThread().GetThreadID()
    threads = sorted(process, key=lambda thread: thread.GetThreadID() != selected)
    target = process.GetTarget()
    program = target.GetExecutable().fullpath or ""
    arguments = [target.GetLaunchInfo().GetArgumentAtIndex(k) for k in range(target.GetLaunchInfo().GetNumArguments())]
    return CoreSnapshot(
        pid,
        [_thread(thread) for thread in threads],
        _regions(process, pid),
        lambda address, size: read_memory(process, address, size),
        _auxv(pid),
        program,
        arguments,
    )


def _thread(thread):
    values = {}
    for register_set in thread.GetFrameAtIndex(0).GetRegisters():
        for register in register_set:
            error = lldb.SBError()
            value = register.GetValueAsUnsigned(error, 0)
            if error.Success():
                values[register.GetName()] = value
    registers = {name: values.get(_LLDB_NAMES.get(name, name), 0) for name in USER_REGS}
    registers["orig_rax"] = values.get("orig_rax", _NOT_IN_A_SYSCALL)
    signal = thread.GetStopReasonDataAtIndex(0) if thread.GetStopReason() == lldb.eStopReasonSignal else 0
    return CoreThread(thread.GetThreadID(), registers, _fxsave(thread.GetFrameAtIndex(0)), signal)


def _fxsave(frame):
    """The x87/SSE registers as the 512-byte FXSAVE area, or None when LLDB does not show them."""
    area = bytearray(FPREGS_SIZE)
    xmm0 = frame.FindRegister("xmm0")
    if not xmm0.IsValid():
        return None
    for name, offset, size in _FX_FIELDS:
        register = frame.FindRegister(name)
        if register.IsValid():
            value = register.GetValueAsUnsigned(0) & ((1 << 8 * size) - 1)
            area[offset : offset + size] = value.to_bytes(size, "little")
    tag = frame.FindRegister("ftag")
    if tag.IsValid():  # FXSAVE keeps one bit per register (1: in use); a 16-bit tag word has 3 for empty
        value = tag.GetValueAsUnsigned(0)
        abridged = sum(1 << k for k in range(8) if (value >> 2 * k) & 3 != 3) if tag.GetByteSize() == 2 else value
        area[4] = abridged & 0xFF
    for k in range(8):
        area[32 + 16 * k : 32 + 16 * k + 10] = _bytes(frame.FindRegister(f"st{k}"), 10)
    for k in range(16):
        area[160 + 16 * k : 176 + 16 * k] = _bytes(frame.FindRegister(f"xmm{k}"), 16)
    return bytes(area)


def _bytes(register, size):
    if not register.IsValid():
        return bytes(size)
    error = lldb.SBError()
    data = register.GetData()
    return bytes(data.ReadRawData(error, 0, min(size, data.GetByteSize())) or b"").ljust(size, b"\0")


def _regions(process, pid):
    try:
        modified = modified_mappings(pid)
        return [CoreRegion(m.start, m.end, m.perms, m.path, m.offset, modified.get(m.start)) for m in read_maps(pid)]
    except OSError:
        pass
    regions = []
    for k in range(process.GetMemoryRegions().GetSize()):
        region = lldb.SBMemoryRegionInfo()
        process.GetMemoryRegions().GetMemoryRegionAtIndex(k, region)
        if region.IsMapped():
            permissions = "".join(f if on else "-" for f, on in zip("rwx", _permissions(region), strict=True)) + "p"
            regions.append(
                CoreRegion(region.GetRegionBase(), region.GetRegionEnd(), permissions, region.GetName() or "")
            )
    return regions


def _permissions(region):
    return region.IsReadable(), region.IsWritable(), region.IsExecutable()


def _auxv(pid):
    try:
        with open(f"/proc/{pid}/auxv", "rb") as auxv:
            return auxv.read()
    except OSError:
        return b""


def core_name(pid):
    """The core's place in a saved bundle."""
    return os.path.join("cores", f"{pid}.core")


def live_state(process, tid):
    """Thread ``tid`` of the stopped live ``process`` as a MachineState: where a live trace ends, every register
    and all memory are known (the history view of a live process recovers the past from them)."""
    thread = process.GetThreadByID(tid)
    if not thread.IsValid():
        return None
    registers = _thread(thread).registers
    tracked = {name: registers[name] for name in TRACKED if name in registers}
    tracked["rflags"] = registers["eflags"]
    return MachineState(tracked, lambda address, size: read_memory(process, address, size))
