"""``pt_config``: the trace buffer, CPU and timing parameters every decoder needs."""

import ctypes
import mmap
from dataclasses import dataclass

from .enums import CpuVendor, ErrorCode
from .error import check
from .native import lib
from .psb import PSB
from .structs import pt_config, pt_cpu, pt_errata

# pt_errata bit positions, in intel-pt.h order.
ERRATA_NAMES = ("bdm70", "bdm64", "skd007", "skd022", "skd010", "skl014", "apl12", "apl11", "skl168", "skz84")

# The PSB payload pattern as an aligned 64-bit word sees it, in either phase.
_PSB_WORDS = (PSB[:8], PSB[1:9])

# pt_conf_flags bits (variant word 0).
BLOCK_END_ON_CALL = 1 << 0
BLOCK_ENABLE_TICK_EVENTS = 1 << 1
BLOCK_END_ON_JUMP = 1 << 2
INSN_ENABLE_TICK_EVENTS = 1 << 0


@dataclass(frozen=True)
class Timing:
    """The clocks behind a trace's timing packets, which libipt needs to turn MTC and CYC into time.

    ``mtc_freq`` is IA32_RTIT_CTL.MTCFreq (an MTC every 2**mtc_freq crystal
    clocks), ``nom_freq`` the nominal core:bus ratio (MSR_PLATFORM_INFO[15:8],
    which with CBR packets gives the length of a CYC cycle), and the TSC runs
    ``cpuid_0x15_ebx / cpuid_0x15_eax`` times faster than the crystal clock.
    Zeros: unknown, and libipt then keeps to TSC packets.
    """

    mtc_freq: int = 0
    nom_freq: int = 0
    cpuid_0x15_eax: int = 0
    cpuid_0x15_ebx: int = 0


@dataclass(frozen=True)
class Cpu:
    """The traced CPU: errata workarounds depend on its model, estimated times on its ``timing``.

    A CPU of unknown ``vendor`` gets no errata workarounds, but its timing still counts.
    """

    family: int
    model: int
    stepping: int
    vendor: CpuVendor = CpuVendor.INTEL
    timing: Timing | None = None

    def to_c(self):
        return pt_cpu(int(self.vendor), self.family, self.model, self.stepping)


def cpu_errata(cpu):
    """The errata libipt applies for ``cpu``, as a bit mask (see ERRATA_NAMES)."""
    errata = pt_errata()
    _find_errata(errata, cpu.to_c())
    return errata.bits


def _find_errata(errata, c_cpu):
    """Fill ``errata`` for the ``pt_cpu`` ``c_cpu``; none for an Intel model newer than this libipt (it answers
    pte_bad_cpu, and its known errata are of older models: refusing the trace would help no one)."""
    status = lib().pt_cpu_errata(ctypes.byref(errata), ctypes.byref(c_cpu))
    if status != -ErrorCode.BAD_CPU:
        check(status, "pt_cpu_errata")


def errata_names(bits):
    """Names of the errata set in an errata bit mask."""
    return [name for index, name in enumerate(ERRATA_NAMES) if bits >> index & 1]


class Config:
    """A ``pt_config`` that owns (or pins) its trace buffer.

    libipt decoders and encoders keep pointers into the buffer, so the Config
    must outlive them; every decoder holds a reference to its Config.
    ``trace`` is read-only bytes (copied) or a writable buffer such as a
    bytearray or a copy-on-write mapped file (used in place: an encoder writes
    into it; a gigabyte trace file is not read into memory).  A buffer whose
    end libipt would read past is copied (see :func:`_overread_faults`).
    """

    def __init__(self, trace, cpu=None, *, flags=0):
        if memoryview(trace).readonly or _overread_faults(trace):
            trace = bytearray(trace)
        size = len(trace)
        if size:
            self._buffer = (ctypes.c_uint8 * size).from_buffer(trace)
        else:  # libipt rejects it, but begin/end must still point somewhere
            self._buffer = (ctypes.c_uint8 * 1)()
        self.trace = trace
        self.cpu = cpu
        begin = ctypes.addressof(self._buffer)
        c = pt_config()
        c.size = ctypes.sizeof(pt_config)
        c.begin = begin
        c.end = begin + size
        if cpu is not None and cpu.vendor == CpuVendor.INTEL:
            c.cpu = cpu.to_c()
            _find_errata(c.errata, c.cpu)
        timing = cpu.timing if cpu is not None and cpu.timing is not None else Timing()
        c.mtc_freq = timing.mtc_freq
        c.nom_freq = timing.nom_freq
        c.cpuid_0x15_eax = timing.cpuid_0x15_eax
        c.cpuid_0x15_ebx = timing.cpuid_0x15_ebx
        c.flags.variant[0] = flags
        self.c = c

    def __len__(self):
        return len(self.trace)

    @property
    def errata(self):
        return self.c.errata.bits


def _overread_faults(trace):
    """Whether libipt 2.0.5 would read an unmapped byte just past ``trace`` (a writable buffer).

    Its PSB search (pt_sync.c) checks an aligned 64-bit word for the PSB
    payload pattern, then reads on from the byte after that word: when the
    word is the buffer's last, that is the byte at ``end`` (fixed upstream in
    libipt 037a46c0, after 2.0.5).  Reading it faults only when ``end`` starts
    a page that is not mapped, which the buffer's owner rules out when its
    memory runs on past ``end`` (a bytearray always holds a NUL after its bytes).
    """
    view = memoryview(trace)
    if view.nbytes < 8 or bytes(view[-8:]) not in _PSB_WORDS:
        return False
    end = ctypes.addressof(ctypes.c_char.from_buffer(view, view.nbytes - 1)) + 1
    if end % mmap.PAGESIZE:
        return False  # the byte after lies on the last byte's page
    owner = view.obj
    if isinstance(owner, bytearray):
        return False
    whole = memoryview(owner)
    owner_end = ctypes.addressof(ctypes.c_char.from_buffer(whole, whole.nbytes - 1)) + 1
    return end >= owner_end
