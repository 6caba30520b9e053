"""What a loaded bundle holds, with every path resolved and every address an int."""

from dataclasses import dataclass, field
from pathlib import Path

from ..elf_info import Segment


@dataclass(frozen=True)
class ClockInfo:
    """What a trace's fine timing packets mean, besides TSC: without it only TSC packets give times.

    ``mtc_period`` is IA32_RTIT_CTL.MTCFreq (an MTC packet every 2**mtc_period
    crystal clocks; None: no MTC), ``tsc_ctc_ratio`` the TSC to crystal clock
    ratio (CPUID 0x15 EBX/EAX) as (numerator, denominator), ``nominal_ratio`` the
    core's nominal ratio (MSR_PLATFORM_INFO[15:8]) that gives CYC packets'
    cycles a length, and ``cycle_accurate`` says the trace has CYC packets.
    """

    mtc_period: int | None = None
    tsc_ctc_ratio: tuple[int, int] | None = None
    nominal_ratio: int | None = None
    cycle_accurate: bool = False

    def describe(self):
        """``MTC every 320 TSC ticks, CYC (cycle-accurate)``: what refines the TSC packets' times."""
        parts = []
        if self.mtc_period is not None:
            crystal = 1 << self.mtc_period
            if self.tsc_ctc_ratio:
                numerator, denominator = self.tsc_ctc_ratio
                parts.append(f"MTC every {crystal * numerator / denominator:g} TSC ticks")
            else:
                parts.append(f"MTC every {crystal} crystal clocks (unused: no TSC:CTC ratio)")
        if self.cycle_accurate:
            parts.append("CYC (cycle-accurate)")
        return ", ".join(parts)


@dataclass(frozen=True)
class CpuInfo:
    """The CPU that produced the trace; ``vendor`` is "intel" or "unknown"; ``clock`` its timing (or None)."""

    vendor: str
    family: int
    model: int
    stepping: int
    clock: ClockInfo | None = None

    def __str__(self):
        if self.vendor != "intel":
            return "unknown CPU (no errata applied)"
        return f"Intel family {self.family} model {self.model} stepping {self.stepping}"


@dataclass(frozen=True)
class TscConversion:
    """perf's time_zero parameters: ns = time_zero + (tsc * mult) >> shift (split to avoid overflow)."""

    time_mult: int
    time_shift: int
    time_zero: int

    def to_ns(self, tsc):
        quotient, remainder = divmod(tsc, 1 << self.time_shift)
        return self.time_zero + quotient * self.time_mult + ((remainder * self.time_mult) >> self.time_shift)


@dataclass(frozen=True)
class Module:
    """A module as the bundle names it; ``path`` is the file actually read (``file`` or ``systemPath``).

    ``segments`` are its PT_LOAD segments at their run-time addresses, read
    once by the loader for decoding and for serving memory.
    """

    system_path: str
    path: Path
    load_address: int
    uuid: str | None
    build_id: str | None
    size: int
    segments: tuple[Segment, ...] = ()

    @classmethod
    def from_elf(cls, system_path, path, elf, load_address, uuid):
        """The module whose file ``elf`` (an ElfInfo of ``path``) is mapped with its lowest page at ``load_address``."""
        return cls(
            system_path=system_path,
            path=path,
            load_address=load_address,
            uuid=uuid,
            build_id=elf.build_id,
            size=elf.load_span,
            segments=tuple(elf.loaded_segments(load_address)),
        )


@dataclass(frozen=True)
class ThreadStop:
    """How a thread's recording ended, when known (an lldb_trace extension of both bundle formats: ``stopReason``).

    A signal stopped it (``signal``), or it exited (``exited``, with the ``exit_status`` the kernel gave
    when the recorder saw it).  ``description`` is how LLDB words a signal stop (``signal SIGSEGV: address
    not mapped to object (fault address=0x0)``); ``pc`` is where the thread stood, on the instruction the
    signal kept from completing.  A trace alone cannot tell either: after a system call that raised the
    signal (``abort()``), tracing stopped at the ``syscall`` while the thread stands after it.
    """

    signal: int | None = None
    description: str | None = None
    pc: int | None = None
    exited: bool = False
    exit_status: int | None = None

    @classmethod
    def exit(cls, status=None):
        """The thread exited, with ``status`` when the recorder knows it."""
        return cls(exited=True, exit_status=status)

    @property
    def text(self):
        """The stop in words, as ``thread list`` and ``trace dump`` show it."""
        if self.exited:
            return "exited" if self.exit_status is None else f"exited with status {self.exit_status}"
        return self.description or f"signal {self.signal}"


@dataclass(frozen=True)
class Thread:
    """``syscall_results``: the JSON file of what each system call returned (``syscallResults``), or None;
    ``register_states``: the file of the registers a recorder saw at each position (``registerStates``), or None;
    ``core_position``: with a process's core, whether it holds this thread's state at its trace's last
    instruction, before it ran (values.core_match.LAST) or after its last item (END); None without one."""

    tid: int
    trace: Path | None
    stop: ThreadStop | None = None
    syscall_results: Path | None = None
    core_position: str | None = None
    register_states: Path | None = None

    @property
    def trace_size(self):
        return self.trace.stat().st_size if self.trace else 0


@dataclass(frozen=True)
class MissingModule:
    """A module the trace ran through whose binary was not found (a perf.data's mapping): its code is a gap."""

    system_path: str
    build_id: str | None
    start: int
    end: int

    def describe(self):
        build_id = f" (build-id {self.build_id})" if self.build_id else ""
        return f"{self.system_path}{build_id} at {self.start:#x}-{self.end:#x}"


@dataclass(frozen=True)
class Process:
    pid: int
    triple: str
    threads: tuple[Thread, ...]
    modules: tuple[Module, ...]
    missing_modules: tuple[MissingModule, ...] = ()
    name: str | None = None  # the command name a perf.data recorded
    untraced_children: tuple[int, ...] = ()  # pids of the processes it created that ran without tracing
    untraced_threads: tuple[int, ...] = ()  # tids of its threads that ran without tracing: memory is shared
    core_file: Path | None = None  # an ELF core of the process where its trace ends ("coreFile")
    start_core_file: Path | None = None  # the same where its recording started ("startCoreFile")


@dataclass(frozen=True)
class CpuTrace:
    """A per-core trace and the context switch records that split it among threads.

    A bundle names files; a perf.data gives the bytes (``trace_data``, ``switch_data``: the switch
    records in LLDB's layout), and its own path as both files, for messages.
    """

    cpu_id: int
    trace: Path
    context_switches: Path
    trace_data: object = field(default=None, repr=False)
    switch_data: bytes | None = field(default=None, repr=False)
    breaks: tuple = ()  # where a perf.data's cpu trace does not continue (perf_data.aux_streams.Break)

    def read_trace(self):
        return self.trace_data if self.trace_data is not None else self.trace.read_bytes()


@dataclass(frozen=True)
class Kernel:
    path: Path
    load_address: int


@dataclass(frozen=True)
class Bundle:
    """A checked bundle: ``format`` is the schema name it matched."""

    path: Path
    format: str
    cpu: CpuInfo
    processes: tuple[Process, ...]
    cpus: tuple[CpuTrace, ...] = ()
    tsc_conversion: TscConversion | None = None
    kernel: Kernel | None = None
    text: str = field(default="", repr=False)
    thread_streams: dict | None = field(default=None, repr=False)  # a perf.data's {tid: AuxStream}
