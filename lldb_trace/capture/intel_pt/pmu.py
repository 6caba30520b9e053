"""The kernel's ``intel_pt`` perf PMU: what this CPU offers, whether this user may use it, the config bits.

The PMU describes itself in sysfs (``/sys/bus/event_source/devices/intel_pt``):

* ``type``: the perf type number to put in ``perf_event_attr.type``;
* ``format/<name>``: where each option goes in ``attr.config``, written by
  the kernel as ``config:10`` (one bit) or ``config:24-27`` (a field);
* ``caps/<name>``: what this CPU supports, in hex (``psb_cyc`` is 1 when the
  PSB period is configurable; ``psb_periods`` is the bit mask of the
  allowed period encodings).

:func:`pmu_info` reads these.  :func:`check_available` says why tracing
cannot work here, before any syscall.  :func:`config_for` builds
``attr.config``.  :func:`buffer_pages` checks the ``-b`` size.  A thread is
traced by :class:`~.thread_event.IntelPtThreadEvent`.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LldbTraceError
from .perf_event import PAGE_SIZE, is_power_of_two
from .perf_event_errors import PARANOID_PATH, read_paranoid

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
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not is_power_of_two(nbytes) or nbytes < 2048:
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


def buffer_pages(kb):
    """Pages for a ``-b KB`` trace buffer: KB a power of two, at least 4; IntelPtConfigError otherwise."""
    if isinstance(kb, bool) or not isinstance(kb, int) or not is_power_of_two(kb) or kb * 1024 < max(4096, PAGE_SIZE):
        minimum = max(4, PAGE_SIZE // 1024)
        raise IntelPtConfigError(
            f"-b {kb}: the trace buffer size must be a power of two of at least {minimum} KiB"
            f" ({minimum}, {minimum * 2}, {minimum * 4}, ...)"
        )
    return kb * 1024 // PAGE_SIZE
