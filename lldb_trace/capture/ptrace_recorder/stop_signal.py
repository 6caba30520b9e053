"""The stop a fatal signal makes: the signal, worded as LLDB words it on Linux, and where the thread stood.

The wording (``signal SIGSEGV: address not mapped to object (fault address=0x0)``) comes from the
siginfo the kernel hands the tracer at the signal's delivery stop: its code says why a fault was raised
and, for memory faults, at which address.
"""

import ctypes
import signal

from ...bundle.model import ThreadStop
from . import ptrace

PTRACE_GETSIGINFO = 0x4202
SI_KERNEL = 0x80
_SIGINFO_SIZE = 128
_MEANINGS = {  # si_code -> meaning, as the kernel's siginfo.h defines them
    signal.SIGSEGV: (
        "address not mapped to object",
        "invalid permissions for mapped object",
        "failed address bounds checks",
    ),
    signal.SIGBUS: ("illegal alignment", "illegal address", "hardware error"),
    signal.SIGILL: (
        "illegal opcode",
        "illegal operand",
        "illegal addressing mode",
        "illegal trap",
        "privileged opcode",
        "privileged register",
        "coprocessor error",
        "internal stack error",
    ),
    signal.SIGFPE: (
        "integer divide by zero",
        "integer overflow",
        "floating point divide by zero",
        "floating point overflow",
        "floating point underflow",
        "floating point inexact result",
        "floating point invalid operation",
        "subscript out of range",
    ),
}
_WITH_ADDRESS = (signal.SIGSEGV, signal.SIGBUS)


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe(number, code, address):
    """LLDB's words for a signal stop with siginfo ``code`` and fault ``address``."""
    text = f"signal {signal_name(number)}"
    meanings = _MEANINGS.get(number, ())
    if 1 <= code <= len(meanings):
        text += f": {meanings[code - 1]}"
        if number in _WITH_ADDRESS:
            text += f" (fault address=0x{address:x})"
    elif number == signal.SIGSEGV and code == SI_KERNEL:
        text += ": sent by kernel (SI_KERNEL)"
    return text


def stop_of(tid, number, pc):
    """The ThreadStop of thread ``tid``, stopped at ``pc`` for the delivery of signal ``number``."""
    info = ctypes.create_string_buffer(_SIGINFO_SIZE)
    try:
        ptrace.ptrace(PTRACE_GETSIGINFO, tid, 0, ctypes.addressof(info))
    except ptrace.PtraceError:
        return ThreadStop(number, f"signal {signal_name(number)}", pc)
    code = int.from_bytes(info.raw[8:12], "little", signed=True)
    address = int.from_bytes(info.raw[16:24], "little")  # si_addr, for the faults that have one
    return ThreadStop(number, describe(number, code, address), pc)
