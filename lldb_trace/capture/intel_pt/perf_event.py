"""Linux perf_event_open(2) through ctypes: one event, its mmap'ed ring and AUX area, its ioctls.

Only what an AUX-area tracer (Intel PT) needs, for x86-64 Linux.  The structs
and numbers of the kernel ABI live in :mod:`lldb_trace.perf`; this module makes
the syscalls.  :class:`PerfEvent` owns one event: the fd, the header + data
mapping (1 + 2^n pages, n may be 0 pages of data), the AUX mapping, the
enable/disable ioctls and the copy-out of the AUX area.  Every failing syscall
raises a :class:`~.perf_event_errors.PerfEventError` subclass whose message is
one line that says what failed and how to fix it.
"""

import contextlib
import ctypes
import fcntl
import mmap
import os
from ctypes import c_int, c_long, c_size_t, c_void_p

from ...bundle.model import TscConversion
from ...perf.attr import PERF_FLAG_FD_CLOEXEC
from ...perf.ioctls import PERF_EVENT_IOC_DISABLE, PERF_EVENT_IOC_ENABLE
from ...perf.mmap_page import CAP_USER_TIME, CAP_USER_TIME_ZERO, perf_event_mmap_page
from .perf_event_errors import PerfEventError, errno_name, mmap_error, open_error

SYS_perf_event_open = 298  # x86-64 (arch/x86/entry/syscalls/syscall_64.tbl)
PAGE_SIZE = mmap.PAGESIZE

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = c_long
_mmap = _libc.mmap
_mmap.restype = c_void_p
_mmap.argtypes = (c_void_p, c_size_t, c_int, c_int, c_int, c_long)
_munmap = _libc.munmap
_munmap.restype = c_int
_munmap.argtypes = (c_void_p, c_size_t)
MAP_FAILED = c_void_p(-1).value


def perf_event_open(attr, pid, cpu=-1, group_fd=-1, flags=PERF_FLAG_FD_CLOEXEC):
    """The raw syscall: returns the new fd, or raises OSError with the errno."""
    fd = _syscall(
        c_long(SYS_perf_event_open), ctypes.byref(attr), c_long(pid), c_long(cpu), c_long(group_fd), c_long(flags)
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


class MappedArea:
    """One area of a perf fd (header and data, or AUX) mapped into memory, unmapped by close()."""

    def __init__(self, fd, length, prot, offset, what):
        address = _mmap(None, length, prot, mmap.MAP_SHARED, fd, offset)
        if address in (None, MAP_FAILED):
            raise mmap_error(ctypes.get_errno(), what, length)
        self.address = address
        self.length = length

    def bytes(self, start=0, length=None):
        """A copy of ``length`` bytes from ``start`` (to the end by default)."""
        if length is None:
            length = self.length - start
        if start < 0 or length < 0 or start + length > self.length:
            raise ValueError(f"bytes [{start}, {start + length}) are outside the {self.length}-byte mapping")
        return ctypes.string_at(self.address + start, length)

    def close(self):
        if self.address is not None:
            _munmap(self.address, self.length)
            self.address = None


def is_power_of_two(n):
    return n > 0 and n & (n - 1) == 0


class PerfEvent:
    """One open perf event: its fd, its mappings and its enabled state.

    Open with :meth:`open`, then :meth:`map_ring` (header page + data
    pages), then, for an AUX PMU, :meth:`map_aux`.  close() undoes all of it.
    """

    def __init__(self, fd, attr, what="perf event"):
        self.fd = fd
        self.attr = attr
        self.what = what
        self.enabled = not attr.disabled
        self.ring = None
        self.aux = None

    @classmethod
    def open(cls, attr, pid, cpu=-1, group_fd=-1, flags=PERF_FLAG_FD_CLOEXEC, *, what="perf event", hint=""):
        """Open ``attr`` for thread ``pid`` (0: the caller) on ``cpu`` (-1: any); raises PerfEventError."""
        try:
            fd = perf_event_open(attr, pid, cpu, group_fd, flags)
        except OSError as exc:
            raise open_error(exc.errno, what, pid=pid, attr=attr, hint=hint) from None
        return cls(fd, attr, what)

    # -- mappings

    def map_ring(self, data_pages=0):
        """Map the header page and ``data_pages`` (0 or a power of two) pages of data, read-write.

        Read-write because the AUX area is set up by writing ``aux_offset``
        and ``aux_size`` into the header page.  A writable data area is
        also non-overwriting: records that find it full are counted as lost.
        """
        if self.ring is not None:
            raise ValueError("the ring is already mapped")
        if data_pages and not is_power_of_two(data_pages):
            raise ValueError(f"the data area must be 0 or a power of two pages, not {data_pages}")
        self.ring = MappedArea(
            self.fd, (1 + data_pages) * PAGE_SIZE, mmap.PROT_READ | mmap.PROT_WRITE, 0, "perf header and data area"
        )

    def map_aux(self, pages, overwrite=True):
        """Map an AUX area of ``pages`` pages (a power of two) after the data area.

        ``overwrite`` maps it read-only, which makes the kernel run the AUX
        buffer in overwrite ("snapshot") mode: the hardware wraps around and
        keeps the newest data, and ``aux_tail`` is ignored.
        """
        if self.ring is None:
            raise ValueError("map_ring() must come before map_aux()")
        if self.aux is not None:
            raise ValueError("the AUX area is already mapped")
        if not is_power_of_two(pages):
            raise ValueError(f"the AUX area must be a power of two pages, not {pages}")
        page = self.header
        page.aux_offset = page.data_offset + page.data_size
        page.aux_size = pages * PAGE_SIZE
        prot = mmap.PROT_READ if overwrite else mmap.PROT_READ | mmap.PROT_WRITE
        self.aux = MappedArea(self.fd, page.aux_size, prot, page.aux_offset, "trace buffer (perf AUX area)")

    @property
    def header(self):
        """The live header page (each field read goes to the shared memory)."""
        if self.ring is None:
            raise ValueError("the ring is not mapped")
        return perf_event_mmap_page.from_address(self.ring.address)

    @property
    def aux_head(self):
        return self.header.aux_head

    @property
    def aux_size(self):
        return self.aux.length if self.aux is not None else 0

    def aux_bytes(self):
        """A copy of the whole AUX area, in buffer order (not trace order)."""
        if self.aux is None:
            raise ValueError("the AUX area is not mapped")
        return self.aux.bytes()

    def data_bytes(self):
        """A copy of the whole data area, in buffer order."""
        page = self.header
        return self.ring.bytes(page.data_offset, page.data_size)

    def tsc_conversion(self):
        """perf's TSC to wall-clock parameters from the header page, or None if the kernel does not offer them."""
        page = self.header
        for _ in range(1000):  # a seqlock: retry while the kernel is updating the page
            sequence = page.lock
            caps, mult, shift, zero = page.capabilities, page.time_mult, page.time_shift, page.time_zero
            if page.lock == sequence:
                break
        if caps & CAP_USER_TIME and caps & CAP_USER_TIME_ZERO:
            return TscConversion(mult, shift, zero)
        return None

    # -- control

    def ioctl(self, request, arg=0):
        try:
            return fcntl.ioctl(self.fd, request, arg)
        except OSError as exc:
            name = errno_name(exc.errno)
            message = f"ioctl {request:#x} on {self.what} failed with {name} ({exc.strerror})"
            raise PerfEventError(message, exc.errno) from None

    def enable(self):
        self.ioctl(PERF_EVENT_IOC_ENABLE)
        self.enabled = True

    def disable(self):
        """Stop the event; for Intel PT this also flushes the CPU's internal buffers to the AUX area."""
        self.ioctl(PERF_EVENT_IOC_DISABLE)
        self.enabled = False

    def close(self):
        for mapping in (self.aux, self.ring):  # AUX first: the kernel ties it to the ring
            if mapping is not None:
                mapping.close()
        self.aux = self.ring = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    @property
    def closed(self):
        return self.fd is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
