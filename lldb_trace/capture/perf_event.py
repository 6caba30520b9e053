"""Linux perf_event_open(2) through ctypes: the attr struct, the mmap'ed rings, ioctls.

Only what an AUX-area tracer (Intel PT) needs, for x86-64 Linux:

* :class:`perf_event_attr` is the kernel's ``struct perf_event_attr`` as of
  ``PERF_ATTR_SIZE_VER8`` (136 bytes, ``config3`` last).  ``size`` is set to
  that on construction.  Older kernels accept it, because the kernel only
  refuses a larger struct when the bytes it does not know are non-zero
  (E2BIG).  The flag bit-fields and the unions keep their C names
  (``attr.disabled = 1``, ``attr.config1``).
* :class:`perf_event_mmap_page` is the first page of the mapping: the
  control words ``data_head/tail/offset/size`` at byte 1024 and
  ``aux_head/tail/offset/size`` after them.
* :class:`PerfEvent` owns one event: the fd, the header + data mapping
  (1 + 2^n pages, n may be 0 pages of data), the AUX mapping, the
  enable/disable ioctls and the copy-out of the AUX area.

``tests/test_intel_pt_backend.py`` compiles a C probe against
``<linux/perf_event.h>`` and checks every size, offset, flag bit and ioctl
number here against it.

Every failing syscall raises a :class:`PerfEventError` subclass.  The
message is one line that says what failed and how to fix it, and ``.errno``
holds the errno.  :func:`open_error` and :func:`mmap_error` build these
errors from an errno, so the messages can be tested without the failures.
"""

import contextlib
import ctypes
import errno as errnos
import fcntl
import mmap
import os
from ctypes import c_int, c_int32, c_long, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p
from pathlib import Path

from ..bundle.model import TscConversion
from ..errors import LldbTraceError

SYS_perf_event_open = 298  # x86-64 (arch/x86/entry/syscalls/syscall_64.tbl)
PAGE_SIZE = mmap.PAGESIZE
PARANOID_PATH = "/proc/sys/kernel/perf_event_paranoid"
MLOCK_PATH = "/proc/sys/kernel/perf_event_mlock_kb"

# enum perf_type_id; dynamic PMUs (intel_pt) have their type in sysfs.
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_TRACEPOINT = 2
PERF_TYPE_HW_CACHE = 3
PERF_TYPE_RAW = 4
PERF_TYPE_BREAKPOINT = 5
PERF_COUNT_SW_DUMMY = 9

PERF_ATTR_SIZE_VER0 = 64
PERF_ATTR_SIZE_VER5 = 112  # aux_watermark: the first size with AUX support
PERF_ATTR_SIZE_VER7 = 128
PERF_ATTR_SIZE_VER8 = 136

# perf_event_open flags
PERF_FLAG_FD_NO_GROUP = 1 << 0
PERF_FLAG_FD_OUTPUT = 1 << 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3

# perf_event_mmap_page.capabilities bits
CAP_USER_RDPMC = 1 << 2
CAP_USER_TIME = 1 << 3
CAP_USER_TIME_ZERO = 1 << 4
CAP_USER_TIME_SHORT = 1 << 5

# aux_action bits (offset 116; before Linux 6.13 this word was __reserved_3 and must stay 0)
AUX_START_PAUSED = 1 << 0
AUX_PAUSE = 1 << 1
AUX_RESUME = 1 << 2


def _ioc(direction, number, size):
    """Linux's _IOC(dir, '$', nr, size) for x86 (dir: 0 none, 1 write, 2 read, 3 both)."""
    return (direction << 30) | (size << 16) | (ord("$") << 8) | number


PERF_EVENT_IOC_ENABLE = _ioc(0, 0, 0)
PERF_EVENT_IOC_DISABLE = _ioc(0, 1, 0)
PERF_EVENT_IOC_REFRESH = _ioc(0, 2, 0)
PERF_EVENT_IOC_RESET = _ioc(0, 3, 0)
PERF_EVENT_IOC_PERIOD = _ioc(1, 4, 8)
PERF_EVENT_IOC_SET_OUTPUT = _ioc(0, 5, 0)
PERF_EVENT_IOC_SET_FILTER = _ioc(1, 6, 8)
PERF_EVENT_IOC_ID = _ioc(2, 7, 8)
PERF_EVENT_IOC_SET_BPF = _ioc(1, 8, 4)
PERF_EVENT_IOC_PAUSE_OUTPUT = _ioc(1, 9, 4)
PERF_EVENT_IOC_QUERY_BPF = _ioc(3, 10, 8)
PERF_EVENT_IOC_MODIFY_ATTRIBUTES = _ioc(1, 11, 8)
PERF_IOC_FLAG_GROUP = 1


class _SamplePeriod(ctypes.Union):
    _fields_ = (("sample_period", c_uint64), ("sample_freq", c_uint64))


class _Wakeup(ctypes.Union):
    _fields_ = (("wakeup_events", c_uint32), ("wakeup_watermark", c_uint32))


class _Config1(ctypes.Union):
    _fields_ = (("bp_addr", c_uint64), ("kprobe_func", c_uint64), ("uprobe_path", c_uint64), ("config1", c_uint64))


class _Config2(ctypes.Union):
    _fields_ = (("bp_len", c_uint64), ("kprobe_addr", c_uint64), ("probe_offset", c_uint64), ("config2", c_uint64))


# The flag word at offset 40, lowest bit first (checked bit by bit against the C compiler).
ATTR_FLAGS = (
    ("disabled", 1),
    ("inherit", 1),
    ("pinned", 1),
    ("exclusive", 1),
    ("exclude_user", 1),
    ("exclude_kernel", 1),
    ("exclude_hv", 1),
    ("exclude_idle", 1),
    ("mmap", 1),
    ("comm", 1),
    ("freq", 1),
    ("inherit_stat", 1),
    ("enable_on_exec", 1),
    ("task", 1),
    ("watermark", 1),
    ("precise_ip", 2),
    ("mmap_data", 1),
    ("sample_id_all", 1),
    ("exclude_host", 1),
    ("exclude_guest", 1),
    ("exclude_callchain_kernel", 1),
    ("exclude_callchain_user", 1),
    ("mmap2", 1),
    ("comm_exec", 1),
    ("use_clockid", 1),
    ("context_switch", 1),
    ("write_backward", 1),
    ("namespaces", 1),
    ("ksymbol", 1),
    ("bpf_event", 1),
    ("aux_output", 1),
    ("cgroup", 1),
    ("text_poke", 1),
    ("build_id", 1),
    ("inherit_thread", 1),
    ("remove_on_exec", 1),
    ("sigtrap", 1),
    ("defer_callchain", 1),
    ("defer_output", 1),
)


class perf_event_attr(ctypes.Structure):
    """``struct perf_event_attr`` (PERF_ATTR_SIZE_VER8); a new one is zeroed with ``size`` set."""

    _anonymous_ = ("_period", "_wakeup", "_config1", "_config2")
    _fields_ = (
        ("type", c_uint32),
        ("size", c_uint32),
        ("config", c_uint64),
        ("_period", _SamplePeriod),
        ("sample_type", c_uint64),
        ("read_format", c_uint64),
        *((name, c_uint64, bits) for name, bits in ATTR_FLAGS),
        ("_reserved_1", c_uint64, 64 - sum(bits for _, bits in ATTR_FLAGS)),
        ("_wakeup", _Wakeup),
        ("bp_type", c_uint32),
        ("_config1", _Config1),
        ("_config2", _Config2),
        ("branch_sample_type", c_uint64),
        ("sample_regs_user", c_uint64),
        ("sample_stack_user", c_uint32),
        ("clockid", c_int32),
        ("sample_regs_intr", c_uint64),
        ("aux_watermark", c_uint32),
        ("sample_max_stack", c_uint16),
        ("_reserved_2", c_uint16),
        ("aux_sample_size", c_uint32),
        ("aux_action", c_uint32),  # AUX_START_PAUSED | AUX_PAUSE | AUX_RESUME (Linux 6.13+)
        ("sig_data", c_uint64),
        ("config3", c_uint64),
    )

    def __init__(self, **fields):
        super().__init__(**fields)
        if not self.size:
            self.size = ctypes.sizeof(self)


class perf_event_mmap_page(ctypes.Structure):
    """The header page of a perf mapping (``struct perf_event_mmap_page``, 1088 bytes used)."""

    _fields_ = (
        ("version", c_uint32),
        ("compat_version", c_uint32),
        ("lock", c_uint32),
        ("index", c_uint32),
        ("offset", ctypes.c_int64),
        ("time_enabled", c_uint64),
        ("time_running", c_uint64),
        ("capabilities", c_uint64),  # CAP_USER_* bits
        ("pmc_width", c_uint16),
        ("time_shift", c_uint16),
        ("time_mult", c_uint32),
        ("time_offset", c_uint64),
        ("time_zero", c_uint64),
        ("size", c_uint32),
        ("_reserved_1", c_uint32),
        ("time_cycles", c_uint64),
        ("time_mask", c_uint64),
        ("_reserved", ctypes.c_uint8 * (116 * 8)),
        ("data_head", c_uint64),
        ("data_tail", c_uint64),
        ("data_offset", c_uint64),
        ("data_size", c_uint64),
        ("aux_head", c_uint64),
        ("aux_tail", c_uint64),
        ("aux_offset", c_uint64),
        ("aux_size", c_uint64),
    )


# -- errors ------------------------------------------------------------------------------------------


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


def _errname(err):
    """The errno's name; Linux's EOPNOTSUPP, not its alias ENOTSUP."""
    return "EOPNOTSUPP" if err == errnos.EOPNOTSUPP else errnos.errorcode.get(err, str(err))


def read_paranoid(path=PARANOID_PATH):
    """``kernel.perf_event_paranoid`` as an int, or None when it cannot be read."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _read_int(path):
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


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
            f"cannot open {what}: permission denied ({_errname(err)}, kernel.perf_event_paranoid is {shown}):"
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
            f"cannot open {what}: this CPU or kernel does not support it ({_errname(err)}){tail}", err
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
            f"cannot open {what}: too many open files ({_errname(err)}): raise the limit with 'ulimit -n'",
            err,
        )
    name = _errname(err)
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
    name = _errname(err)
    return PerfEventError(f"cannot map the {kib} KiB {what}: mmap failed with {name} ({os.strerror(err)})", err)


# -- syscalls ----------------------------------------------------------------------------------------

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


class Mapping:
    """One mmap'ed region of a perf fd, unmapped by close()."""

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


def _is_power_of_two(n):
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
        if data_pages and not _is_power_of_two(data_pages):
            raise ValueError(f"the data area must be 0 or a power of two pages, not {data_pages}")
        self.ring = Mapping(
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
        if not _is_power_of_two(pages):
            raise ValueError(f"the AUX area must be a power of two pages, not {pages}")
        page = self.header
        page.aux_offset = page.data_offset + page.data_size
        page.aux_size = pages * PAGE_SIZE
        prot = mmap.PROT_READ if overwrite else mmap.PROT_READ | mmap.PROT_WRITE
        self.aux = Mapping(self.fd, page.aux_size, prot, page.aux_offset, "trace buffer (perf AUX area)")

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
            name = _errname(exc.errno)
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
