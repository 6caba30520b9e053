"""What a recording is asked for (RecordOptions) and what it gives (Recording): the recorder's inputs and
results, apart from the stepping that joins them (recording.py)."""

from dataclasses import dataclass, field


@dataclass
class RecordOptions:
    until: str | None = None
    from_start: bool = False
    all_threads: bool = False
    tsc: bool = False
    mtc_period: int | None = None  # with tsc: MTC packets too
    cycle_accurate: bool = False  # with tsc: CYC packets too
    psb_period: int = 4096
    buffer_kb: int | None = None
    overflow_at: int | None = None
    overflow_lost: int = 64
    aslr: bool = False
    cores: bool = True  # the cores where recording starts and ends, and each syscall's results


@dataclass
class Recording:
    program: str
    args: list
    pid: int
    status: str  # "exited", "until", "crashed", "interrupted"
    detail: str
    threads: dict = field(default_factory=dict)  # tid -> ThreadRecorder, in creation order
    streams: dict = field(default_factory=dict)  # tid -> bytes
    modules: dict = field(default_factory=dict)  # path -> load address
    memory_modules: list = field(default_factory=list)  # [(name, load address, bytes)]: with no file (the vdso)
    stops: dict = field(default_factory=dict)  # tid -> ThreadStop: the fatal signal, or the exit status
    untraced_children: list = field(default_factory=list)  # pids of the processes it created, run untraced
    untraced_threads: list = field(default_factory=list)  # tids of its threads not recorded (--threads main)
    tsc_zero_ns: int | None = None  # realtime minus TSC, when timing was recorded
    clock: object = None  # the ClockInfo of MTC/CYC packets, when recorded
    seconds: float = 0.0
    cores: object = None  # core_snapshot.Cores: the cores written where recording started and ended
    syscall_results: dict = field(default_factory=dict)  # tid -> JSON text of its syscall results
    register_states: dict = field(default_factory=dict)  # tid -> .npz bytes of the registers at each step

    @property
    def instructions(self):
        return sum(len(recorder.truth.addresses) for recorder in self.threads.values())
