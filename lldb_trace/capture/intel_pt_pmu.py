"""Hardware capture: Intel PT through the kernel's ``intel_pt`` perf PMU.

The PMU describes itself in sysfs (``/sys/bus/event_source/devices/intel_pt``):

* ``type``: the perf type number to put in ``perf_event_attr.type``;
* ``format/<name>``: where each option goes in ``attr.config``, written by
  the kernel as ``config:10`` (one bit) or ``config:24-27`` (a field);
* ``caps/<name>``: what this CPU supports, in hex (``psb_cyc`` is 1 when the
  PSB period is configurable; ``psb_periods`` is the bit mask of the
  allowed period encodings).

:func:`pmu_info` reads these.  :func:`check_available` says why tracing
cannot work here, before any syscall.  :func:`config_for` builds
``attr.config``.  :func:`buffer_pages` checks the ``-b`` size.
:class:`ThreadTrace` traces one thread.

Design, as in LLDB's per-thread intel-pt collector:

* One event per thread: ``pid=tid, cpu=-1``, user space only
  (``exclude_kernel``, ``exclude_hv``), no ``inherit``.  The kernel refuses
  to mmap an inherited per-thread event (``cpu == -1``), and an inherited
  event would also mix the new threads' packets into one buffer.  So the
  caller traces a new thread by opening another ThreadTrace for it when the
  debugger reports the thread (clone events, or LLDB's thread list at a stop).
* The AUX area is mapped read-only, which puts it in overwrite ("snapshot")
  mode: a circular buffer that always holds the newest ``-b`` KiB.  The data
  area has no pages (only the header page), as in LLDB: nothing reads the
  perf records.
* Reading pauses the event with PERF_EVENT_IOC_DISABLE.  That makes the CPU
  flush its internal packet buffers to memory and brings ``aux_head`` up to
  date.  The buffer is then copied and the event re-enabled
  (PERF_EVENT_IOC_ENABLE).

The only mode-specific step is finding the oldest byte.  In snapshot mode the
Intel PT driver reports ``aux_head`` as the write offset inside the buffer,
not as a running byte count, so the offset alone cannot tell whether the
buffer has wrapped.  The kernel hands out AUX pages zeroed, so
:func:`snapshot_head` treats any non-zero byte at or after the offset as
proof of a wrap.  If the buffer wrapped and that region is still all zeros,
the only bytes lost are zero bytes, which are Intel PT PAD packets, so the
trace decodes the same.  A head already at or past the buffer size is taken
as a running count.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LldbTraceError
from .perf_event import PAGE_SIZE, PARANOID_PATH, PerfEvent, perf_event_attr, read_paranoid

SYSFS_ROOT = "/sys/bus/event_source/devices/intel_pt"
STATUS_PATH = "/proc/self/status"
SOFTWARE_HINT = "'pt start --backend software' works everywhere"
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
PSB_PERIOD_BASE = 11  # a psb_period encoding n means a PSB every 2**(n + 11) bytes


class IntelPtUnavailableError(LldbTraceError):
    """Intel PT cannot be used on this machine."""


class IntelPtPermissionError(IntelPtUnavailableError):
    """Intel PT exists, but this user may not use it."""


class IntelPtConfigError(LldbTraceError):
    """A tracing option is invalid or not supported by this CPU."""


@dataclass(frozen=True)
class FormatField:
    """One ``format/<name>`` file: the attr field and its bit ranges, lowest bits of the value first."""

    name: str
    attr_field: str
    ranges: tuple[tuple[int, int], ...]

    @property
    def width(self):
        return sum(high - low + 1 for low, high in self.ranges)

    def encode(self, value):
        """``value`` placed in this field's bits; IntelPtConfigError when it does not fit."""
        if not 0 <= value < 1 << self.width:
            raise IntelPtConfigError(
                f"{self.name}={value} does not fit in its {self.width}-bit field ({self.attr_field}:"
                f"{_ranges_text(self.ranges)}): use 0 to {(1 << self.width) - 1}"
            )
        bits = 0
        for low, high in self.ranges:
            span = high - low + 1
            bits |= (value & ((1 << span) - 1)) << low
            value >>= span
        return bits


def _ranges_text(ranges):
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in ranges)


_FORMAT = re.compile(r"^(config[0-9]*):(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)$")


def parse_format(name, text):
    """A FormatField from a format file's text such as ``config:24-27``; IntelPtUnavailableError if malformed."""
    match = _FORMAT.match(text.strip())
    if not match:
        raise IntelPtUnavailableError(f"format/{name} holds {text.strip()!r}, not 'config:BIT' or 'config:LOW-HIGH'")
    ranges = []
    for part in match.group(2).split(","):
        low, _, high = part.partition("-")
        ranges.append((int(low), int(high or low)))
    if any(low > high or high > 63 for low, high in ranges):
        raise IntelPtUnavailableError(f"format/{name} holds {text.strip()!r}: bit ranges must lie within 0-63")
    return FormatField(name, match.group(1), tuple(ranges))


@dataclass(frozen=True)
class PmuInfo:
    """The intel_pt PMU as sysfs describes it."""

    root: Path
    type: int
    formats: dict[str, FormatField] = field(default_factory=dict)
    caps: dict[str, int] = field(default_factory=dict)

    def cap(self, name, default=0):
        return self.caps.get(name, default)

    @property
    def psb_periods(self):
        """The psb_period encodings this CPU accepts (0, the default, always), or () when not configurable."""
        if not self.cap("psb_cyc") or "psb_period" not in self.formats:
            return ()
        mask = self.cap("psb_periods")
        return tuple(value for value in range(32) if value == 0 or mask >> value & 1)


def pmu_info(sysfs_root=SYSFS_ROOT):
    """Read the PMU's ``type``, ``format/*`` and ``caps/*``; IntelPtUnavailableError when it is absent."""
    root = Path(sysfs_root)
    type_file = root / "type"
    if not root.is_dir() or not type_file.exists():
        raise IntelPtUnavailableError(
            f"this CPU has no Intel PT (no intel_pt PMU in {root.parent}): use 'pt start --backend software'"
        )
    try:
        pmu_type = int(type_file.read_text().strip())
    except (OSError, ValueError) as exc:
        raise IntelPtUnavailableError(f"cannot read the intel_pt PMU type from {type_file}: {exc}") from None
    formats = {}
    if (root / "format").is_dir():
        for path in sorted((root / "format").iterdir()):
            formats[path.name] = parse_format(path.name, path.read_text())
    caps = {}
    if (root / "caps").is_dir():
        for path in sorted((root / "caps").iterdir()):
            try:
                caps[path.name] = int(path.read_text().strip(), 16)  # the kernel writes "%x\n"
            except (OSError, ValueError):
                continue
    return PmuInfo(root, pmu_type, formats, caps)


def _effective_capabilities(status_path):
    try:
        for line in Path(status_path).read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def check_available(sysfs_root=SYSFS_ROOT, paranoid_path=PARANOID_PATH, status_path=STATUS_PATH):
    """The PmuInfo when Intel PT can trace this user's threads; else IntelPtUnavailableError (or its
    subclass IntelPtPermissionError), whose message names the fix.

    Root, CAP_PERFMON and CAP_SYS_ADMIN may always trace.  Other users may
    trace their own threads in user space when kernel.perf_event_paranoid is
    2 or lower.  Some distributions add a level 3 that forbids all perf
    events to unprivileged users.
    """
    pmu = pmu_info(sysfs_root)
    if os.geteuid() == 0:
        return pmu
    capabilities = _effective_capabilities(status_path)
    if capabilities >> CAP_PERFMON & 1 or capabilities >> CAP_SYS_ADMIN & 1:
        return pmu
    paranoid = read_paranoid(paranoid_path)
    if paranoid is not None and paranoid > 2:
        raise IntelPtPermissionError(
            f"Intel PT is present but kernel.perf_event_paranoid is {paranoid}, which forbids perf events to users"
            " without CAP_PERFMON: run 'sudo sysctl kernel.perf_event_paranoid=-1' (2 is enough), or run as root"
            f" or with CAP_PERFMON; {SOFTWARE_HINT}"
        )
    return pmu


def _format(pmu, name, purpose):
    if name not in pmu.formats:
        raise IntelPtConfigError(
            f"this CPU's Intel PT cannot {purpose} (no format/{name} in {pmu.root}): leave the option out"
        )
    form = pmu.formats[name]
    if form.attr_field != "config":
        raise IntelPtConfigError(f"format/{name} is in {form.attr_field}, but only config is supported")
    return form


def psb_period_encoding(nbytes):
    """The psb_period encoding for a PSB every ``nbytes`` bytes (a power of two of at least 2 KiB)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not _power_of_two(nbytes) or nbytes < 2048:
        raise IntelPtConfigError(
            f"a PSB period of {nbytes} bytes is not possible: Intel PT periods are powers of two from 2048 bytes"
        )
    return nbytes.bit_length() - 1 - PSB_PERIOD_BASE


def config_for(pmu, tsc=False, psb_period=None):
    """``attr.config`` for ``pmu``: control flow (``pt`` + ``branch``), TSC packets if ``tsc``, and the
    ``psb_period`` encoding (a PSB every 2**(n+11) bytes) when not None.

    IntelPtConfigError when the CPU lacks an option or psb_period is not one
    of the values caps/psb_periods allows.
    """
    config = 0
    # With "pt" (config bit 0) set, the kernel passes "branch" through as
    # given.  Without it, the kernel turns branch tracing on by itself, as
    # its first versions always did.  Set both bits, or neither.
    if "pt" in pmu.formats and "branch" in pmu.formats:
        config |= _format(pmu, "pt", "trace").encode(1) | _format(pmu, "branch", "trace branches").encode(1)
    if tsc:
        config |= _format(pmu, "tsc", "add timestamps (--tsc)").encode(1)
    if psb_period is not None:
        if isinstance(psb_period, bool) or not isinstance(psb_period, int):
            raise IntelPtConfigError(f"psb_period must be an integer, not {psb_period!r}")
        form = _format(pmu, "psb_period", "set the PSB period (--psb-period)")
        if not pmu.cap("psb_cyc"):
            raise IntelPtConfigError(
                f"this CPU's Intel PT has a fixed PSB period (caps/psb_cyc is 0 in {pmu.root}): leave --psb-period out"
            )
        allowed = pmu.psb_periods
        if psb_period not in allowed:
            choices = ", ".join(f"{value} ({_kib(value)})" for value in allowed)
            raise IntelPtConfigError(
                f"psb_period {psb_period} is not supported by this CPU: use one of {choices}"
                " (the value, then the bytes between PSBs)"
            )
        config |= form.encode(psb_period)
    return config


def _kib(value):
    nbytes = 1 << (value + PSB_PERIOD_BASE)
    return f"{nbytes // 1024} KiB" if nbytes >= 1024 else f"{nbytes} B"


def _power_of_two(n):
    return n > 0 and n & (n - 1) == 0


def buffer_pages(kb):
    """Pages for a ``-b KB`` trace buffer: KB a power of two, at least 4; IntelPtConfigError otherwise."""
    if isinstance(kb, bool) or not isinstance(kb, int) or not _power_of_two(kb) or kb * 1024 < max(4096, PAGE_SIZE):
        minimum = max(4, PAGE_SIZE // 1024)
        raise IntelPtConfigError(
            f"-b {kb}: the trace buffer size must be a power of two of at least {minimum} KiB"
            f" ({minimum}, {minimum * 2}, {minimum * 4}, ...)"
        )
    return kb * 1024 // PAGE_SIZE


def snapshot_head(ring, raw_head):
    """``raw_head`` (the kernel's ``aux_head``) as a running byte count that :func:`snapshot_bytes` accepts.

    A head at or past ``len(ring)`` already is one.  A smaller head is an
    offset into the buffer: the buffer has wrapped when any byte from it to
    the end is non-zero (the kernel zeroes AUX pages when it allocates them).
    """
    if raw_head < 0:
        raise ValueError(f"aux_head {raw_head} is negative")
    ring = ring if isinstance(ring, bytes | bytearray) else bytes(memoryview(ring).cast("B"))
    size = len(ring)
    if size == 0 or raw_head >= size:
        return raw_head
    wrapped = ring.count(0, raw_head) != size - raw_head
    return raw_head + size if wrapped else raw_head


def snapshot_bytes(ring, head):
    """The trace held by a circular buffer ``ring`` whose writer has written ``head`` bytes in all, oldest first.

    Before the first wrap (``head < len(ring)``) that is ``ring[:head]``.
    After it, the oldest byte is at ``head % len(ring)``, and the result is
    the whole ring rotated to start there.
    """
    if head < 0:
        raise ValueError(f"head {head} is negative")
    view = ring if isinstance(ring, bytes | bytearray) else memoryview(ring).cast("B")
    size = len(view)
    if size == 0 or head == 0:
        return b""
    if head < size:
        return bytes(view[:head])
    start = head % size
    return bytes(view[start:]) + bytes(view[:start])


class ThreadTrace:
    """Intel PT of one thread into a circular ``buffer_kb`` KiB buffer, read on demand.

    ``ThreadTrace(tid, buffer_kb)`` checks availability, opens the event
    disabled, maps the buffers, then enables it.  :meth:`read` returns the
    trace bytes, oldest first.  :meth:`changed` says whether :meth:`read`
    would return something new.  :meth:`close` stops tracing and frees
    everything.  Threads created later are not followed: open a ThreadTrace
    for each of them (see the module notes).  Passing ``pmu`` (from
    :func:`check_available` or :func:`pmu_info`) skips the availability check.
    """

    def __init__(
        self,
        tid,
        buffer_kb=4,
        *,
        tsc=False,
        psb_period=None,
        pmu=None,
        sysfs_root=SYSFS_ROOT,
        paranoid_path=PARANOID_PATH,
    ):
        pages = buffer_pages(buffer_kb)
        if pmu is None:
            pmu = check_available(sysfs_root, paranoid_path)
        attr = perf_event_attr(type=pmu.type, config=config_for(pmu, tsc, psb_period))
        attr.disabled = 1
        attr.exclude_kernel = 1
        attr.exclude_hv = 1
        event = PerfEvent.open(attr, tid, -1, what=f"Intel PT for thread {tid}", hint=SOFTWARE_HINT)
        try:
            event.map_ring(0)
            event.map_aux(pages, overwrite=True)
            event.enable()
        except BaseException:
            event.close()
            raise
        self._attach(tid, event)

    @classmethod
    def from_event(cls, tid, event):
        """A ThreadTrace over an already open and mapped event (any object with PerfEvent's
        ``aux_head``, ``aux_bytes()``, ``enabled``, ``enable()``, ``disable()`` and ``close()``)."""
        trace = cls.__new__(cls)
        trace._attach(tid, event)
        return trace

    def _attach(self, tid, event):
        self.tid = tid
        self._event = event
        self._last_head = 0

    @property
    def buffer_size(self):
        return self._event.aux_size

    @property
    def closed(self):
        return self._event is None

    def _live_event(self):
        if self._event is None:
            raise IntelPtUnavailableError(f"the Intel PT trace of thread {self.tid} is closed")
        return self._event

    def changed(self):
        """Whether ``aux_head`` moved since the last read (or since the start).

        The kernel updates ``aux_head`` when the thread is scheduled out or
        the event disabled, so the answer is current for a stopped thread,
        such as one stopped in the debugger.  A buffer that wrapped exactly
        a whole number of times reads as unchanged.
        """
        return self._live_event().aux_head != self._last_head

    def read(self):
        """The trace so far, oldest byte first: pause (which flushes), copy, resume."""
        event = self._live_event()
        was_enabled = event.enabled
        if was_enabled:
            event.disable()
        try:
            raw_head = event.aux_head
            ring = event.aux_bytes()
        finally:
            if was_enabled:
                event.enable()
        self._last_head = raw_head
        return snapshot_bytes(ring, snapshot_head(ring, raw_head))

    def close(self):
        if self._event is not None:
            event, self._event = self._event, None
            event.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
