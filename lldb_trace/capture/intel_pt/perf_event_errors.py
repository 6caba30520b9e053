"""perf_event_open and mmap failures as one-line errors that say how to fix them.

Every failing perf syscall raises a :class:`PerfEventError` subclass, with the
errno in ``.errno``.  :func:`open_error` and :func:`mmap_error` build these
errors from an errno, so the messages can be tested without the failures.
"""

import errno as errnos
import os
from pathlib import Path

from ...errors import LldbTraceError

PARANOID_PATH = "/proc/sys/kernel/perf_event_paranoid"
MLOCK_PATH = "/proc/sys/kernel/perf_event_mlock_kb"


class PerfEventError(LldbTraceError):
    """A perf_event syscall failed; ``errno`` is the kernel's error number."""

    def __init__(self, message, errno=0):
        super().__init__(message)
        self.errno = errno


class PerfPermissionError(PerfEventError):
    """The kernel's permission rules (perf_event_paranoid, capabilities, ptrace access) refused."""


class PerfUnsupportedError(PerfEventError):
    """This kernel or CPU has no such event, or refuses its settings."""


class PerfBusyError(PerfEventError):
    """The PMU is taken by another user (perf, a VM, another debugger)."""


class PerfNoSuchThreadError(PerfEventError):
    """The thread to trace does not exist (any more)."""


class PerfResourceError(PerfEventError):
    """Out of file descriptors, memory or locked-memory allowance."""


def errno_name(err):
    """The errno's name; Linux's EOPNOTSUPP, not its alias ENOTSUP."""
    return "EOPNOTSUPP" if err == errnos.EOPNOTSUPP else errnos.errorcode.get(err, str(err))


def _read_int(path):
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def read_paranoid(path=PARANOID_PATH):
    """``kernel.perf_event_paranoid`` as an int, or None when it cannot be read."""
    return _read_int(path)


def open_error(err, what, *, pid=None, attr=None, paranoid_path=PARANOID_PATH, hint=""):
    """The PerfEventError for perf_event_open failing with ``err`` while opening ``what``.

    ``hint`` (e.g. another backend to use) is appended to the messages
    about permissions and missing support.
    """
    tail = f"; {hint}" if hint else ""
    config = f" (config {attr.config:#x})" if attr is not None else ""
    if err in (errnos.EACCES, errnos.EPERM):
        paranoid = read_paranoid(paranoid_path)
        shown = "unreadable" if paranoid is None else str(paranoid)
        return PerfPermissionError(
            f"cannot open {what}: permission denied ({errno_name(err)}, kernel.perf_event_paranoid is {shown}):"
            " run 'sudo sysctl kernel.perf_event_paranoid=-1', or run as root or with CAP_PERFMON"
            f" (tracing another user's process always needs root){tail}",
            err,
        )
    if err == errnos.ENOENT:
        kind = f" {attr.type}" if attr is not None else ""
        return PerfUnsupportedError(
            f"cannot open {what}: the kernel has no PMU of type{kind} (ENOENT; inside a VM Intel PT is usually"
            f" not passed through){tail}",
            err,
        )
    if err == errnos.EINVAL:
        return PerfUnsupportedError(
            f"cannot open {what}: the kernel rejected its settings{config} (EINVAL): leave out --tsc and"
            f" --psb-period, or check what the CPU offers in /sys/bus/event_source/devices/*/caps{tail}",
            err,
        )
    if err in (errnos.ENODEV, errnos.EOPNOTSUPP):
        return PerfUnsupportedError(
            f"cannot open {what}: this CPU or kernel does not support it ({errno_name(err)}){tail}", err
        )
    if err == errnos.E2BIG:
        expected = f" (it expects {attr.size} bytes)" if attr is not None else ""
        return PerfUnsupportedError(
            f"cannot open {what}: the kernel is too old for this perf_event_attr{expected} (E2BIG):"
            f" upgrade the kernel{tail}",
            err,
        )
    if err == errnos.EBUSY:
        return PerfBusyError(
            f"cannot open {what}: the PMU is busy (EBUSY): another tracer (perf, a virtual machine, another"
            " debugger) is using it; stop that one and retry",
            err,
        )
    if err == errnos.ESRCH:
        return PerfNoSuchThreadError(f"cannot open {what}: thread {pid} does not exist (ESRCH): did it exit?", err)
    if err in (errnos.EMFILE, errnos.ENFILE):
        return PerfResourceError(
            f"cannot open {what}: too many open files ({errno_name(err)}): raise the limit with 'ulimit -n'",
            err,
        )
    name = errno_name(err)
    return PerfEventError(f"cannot open {what}: perf_event_open failed with {name} ({os.strerror(err)}){tail}", err)


def mmap_error(err, what, nbytes, *, mlock_path=MLOCK_PATH):
    """The PerfEventError for mmap of ``nbytes`` (the ``what`` area) failing with ``err``."""
    kib = nbytes // 1024
    if err == errnos.EPERM:
        limit = _read_int(mlock_path)
        shown = "unreadable" if limit is None else f"{limit} KiB"
        return PerfResourceError(
            f"cannot map the {kib} KiB {what}: it exceeds the locked-memory allowance for perf buffers"
            f" (kernel.perf_event_mlock_kb is {shown}, EPERM): use a smaller buffer (-b), raise it with"
            " 'sudo sysctl kernel.perf_event_mlock_kb=<KiB>', or run as root",
            err,
        )
    if err == errnos.ENOMEM:
        return PerfResourceError(
            f"cannot map the {kib} KiB {what}: the kernel is out of memory for it (ENOMEM): use a smaller buffer (-b)",
            err,
        )
    if err == errnos.EOPNOTSUPP:
        return PerfUnsupportedError(f"cannot map the {kib} KiB {what}: this event has no AUX area (EOPNOTSUPP)", err)
    name = errno_name(err)
    return PerfEventError(f"cannot map the {kib} KiB {what}: mmap failed with {name} ({os.strerror(err)})", err)
