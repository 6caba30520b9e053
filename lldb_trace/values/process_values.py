"""The values of one traced process's threads: its known states found, each thread's recovery made on first use.

Each ProcessTrace has one ProcessValues (``values_of(process_trace)``).  The known
states are the bundle's: the core file where the trace ends (``coreFile``),
the state where recording started (``startCoreFile``) and the system calls'
results and registers a recorder saved (``syscallResults``,
``registerStates``).  A thread's ThreadValues is
built when a value of it is first asked for: its positions' addresses come
from the decoded trace, a gap's position as 0 (nothing is known across it).
Without any known state the recovery still knows what the trace's
instructions themselves determine (constants, the pc).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..decode.cursor import runs
from ..errors import LldbTraceError
from ..libipt.enums import ErrorCode, EventType
from .core_file import open_core
from .core_match import cut_off
from .machine_state import TRACKED
from .patched_code import patched_pages, without_pages
from .register_states import RegisterStatesError, read_register_states
from .shared_mappings import live_shared_spans, rseq_areas, shared_spans, unmapped
from .syscall_file import SyscallResultsError, read_syscall_results
from .thread_creation import head_windows

if TYPE_CHECKING:
    from ..process_trace import ProcessTrace
    from .core_file import CoreFile
    from .machine_state import MachineState
    from .recovery import Access, SyscallResult, ThreadValues


class ValuesError(LldbTraceError):
    """A known state the bundle names cannot be used."""


# The positions one thread's recovery covers, counted from the end: a question far from the end solves every
# window between it and the end (about 9 s and 350 MB a million instructions), so a long trace's values are those
# of its last quarter million instructions (about 2 s at worst).
MOST_POSITIONS = 250_000
IO_URING = "[io_uring]"  # the name an io_uring's ring mapping has ("anon_inode:[io_uring]")


def values_of(process_trace: ProcessTrace) -> ProcessValues:
    """The ProcessValues of ``process_trace``, made on first use and kept as long as the trace."""
    found = process_trace.kept.get("values")
    if found is None:
        found = process_trace.kept["values"] = ProcessValues(process_trace)
    return found  # type: ignore[return-value]


class ProcessValues:
    """The known states of ``process_trace``'s process and its threads' recoveries, made on first use."""

    def __init__(self, process_trace: ProcessTrace) -> None:
        self.process_trace = process_trace
        self._cores: dict[str, CoreFile | None] = {}
        self._threads: dict[int, ThreadValues | None] = {}
        self._built_from: dict[int, int] = {}  # tid -> the item count its recovery was built from
        self._known_sharing: tuple | None = None  # what the known states say of shared memory (_sharing), once found
        self._code: Callable[[int, int], bytes] | None = None  # the code's bytes, less pages it patched (read_code)
        # a live process where its trace ends (debugger/live_values.py): tid -> its MachineState there, or None
        self.live_end: Callable[[int], MachineState | None] | None = None
        self.live_states: Callable[[int], tuple | None] | None = None  # a live recorder's register states
        self.live_shared: Callable[[], list] | None = None  # a live process's mappings: (start, end, path, perms)

    @property
    def end_core(self) -> CoreFile | None:
        """The core file of the process where its trace ends, or None."""
        return self._core("core_file")

    @property
    def start_core(self) -> CoreFile | None:
        return self._core("start_core_file")

    def _core(self, key: str) -> CoreFile | None:
        if key not in self._cores:
            path = getattr(self.process_trace.process, key, None)
            self._cores[key] = open_core(path) if path is not None else None
        return self._cores[key]

    def end_state(self, tid: int) -> MachineState | None:
        """Thread ``tid``'s registers and memory where its trace ends: the core's, the live process's, or None."""
        core = self.end_core
        if core is not None and core.thread(tid) is not None:
            return core.state(tid)
        return self.live_end(tid) if self.live_end is not None else None

    def has_known_state(self, tid: int) -> bool:
        """Whether anything but the trace tells thread ``tid``'s values: a core at either end, the live process,
        the registers a recorder saw (a thread that exited before the end core has only those)."""
        cores = (self.end_core, self.start_core)
        if self.live_end is not None or any(core is not None and core.thread(tid) is not None for core in cores):
            return True
        return getattr(self.process_trace.thread(tid), "register_states", None) is not None

    def thread(self, tid: int) -> ThreadValues | None:
        """Thread ``tid``'s recovery; None when it has no decoded instructions, or no known state (the trace
        alone tells only the pc, and solving it would cost time and memory for a constant or two)."""
        if not self.has_known_state(tid):
            return None
        decoded = self.process_trace.decoded(tid)
        count = decoded.item_count if decoded is not None else 0
        if tid not in self._threads or self._built_from[tid] != count:  # a live trace grows: positions change
            self._threads[tid] = self._recovery(tid)
            self._built_from[tid] = count
        return self._threads[tid]

    def _recovery(self, tid: int) -> ThreadValues | None:
        from .recovery import ThreadValues  # the engine (capstone, unicorn) loads when a value is first asked for

        decoded = self.process_trace.decoded(tid)
        if decoded is None or not decoded.item_count:
            return None
        first = max(0, decoded.item_count - MOST_POSITIONS)  # a long trace: the values of its end only
        addresses = position_addresses(decoded, self.process_trace.expander, first)
        interrupted = interruptions(decoded, first)
        if cut_off(decoded):  # the thread ran on after the trace's last instruction: nothing carries to the end
            interrupted[len(addresses) - 1] = None
        end = self.end_state(tid)
        # the core is the state after the last item ran (the history's end position), or before it ran; a core
        # at a REP string instruction may be partway through it: as after it, what it changes is unknown before
        classifier = self.process_trace.expander.classifier
        last = int(addresses[-1])
        before_last = getattr(self.process_trace.thread(tid), "core_position", None) == "last"
        end_after_last = not before_last or (last != 0 and classifier[last].repeats)
        stopped_at = end.registers.get("rip") if end is not None else None
        if end is not None and not before_last and stopped_at and classifier[stopped_at].repeats:
            # the core stands at a REP string instruction the trace does not hold: it faulted partway through,
            # its iterations so far done. It is the last instruction, so what it changed is unknown before it.
            addresses = np.append(addresses, np.uint64(stopped_at))
        start_core = self.start_core if not first else None
        start = start_core.state(tid) if start_core is not None and start_core.thread(tid) is not None else None
        if start is not None and start.registers.get("rip") != int(addresses[0]):
            raise ValuesError(
                f"{start_core.path} is not where the trace of thread {tid} starts: its pc is "
                f"{start.registers.get('rip', 0):#x}, the trace's first instruction {int(addresses[0]):#x}; give the "
                "state where recording started (startCoreFile), or none"
            )
        unsure = [max(0, gap.index - first) for gap in decoded.gaps if gap.code != ErrorCode.OVERFLOW]
        counted = _InstructionPositions(
            addresses, first - sum(gap.index < first for gap in decoded.gaps), min(unsure, default=None)
        )
        shared, volatile = self._sharing()
        shared = shared or (first > 0 and self._created_before(decoded, first))
        values = ThreadValues(
            addresses,
            self.read_code(),
            end=end,
            end_after_last=end_after_last,
            start=start,
            syscalls=self._syscalls(tid, counted),
            shared_memory=shared,
            recorded=self._register_states(tid, counted),
            interrupted=interrupted,
            volatile=volatile,
        )
        return TailValues(values, first) if first else values

    def _created_before(self, decoded, first: int) -> bool:
        """Whether the thread may have started a task sharing its memory before position ``first``: in a long
        trace's head, which the recovery does not cover (and so does not look at for one)."""
        from .recovery import ThreadValues

        read = self.read_code()
        expander = self.process_trace.expander
        windows = head_windows(decoded, expander, first, read, ThreadValues([], read)._effect)
        if not windows:
            return False
        joined = [address for window in windows for address in (*window, 0)]  # a 0 between: nothing carries
        ends = np.cumsum([len(window) + 1 for window in windows]) - 2  # each window's syscall
        return ThreadValues(joined, read).first_creation(ends.tolist()) is not None

    def read_code(self) -> Callable[[int, int], bytes]:
        """The module files' code and constants, but on the pages a core shows the program changed (patched_code)."""
        if self._code is None:
            read = self.process_trace.module_bytes.read_unchanging
            cores = [core for core in (self.end_core, self.start_core) if core is not None]
            self._code = without_pages(read, patched_pages(cores, read))
        return self._code

    def _sharing(self) -> tuple[bool, list]:
        """``(shared, volatile)``: whether another thread, or the kernel, may have written any memory meanwhile (the
        trace follows several threads; a known state holds threads it does not follow; the recorder let threads run
        untraced, ``--threads main``; the process has an io_uring, whose completions the kernel writes to any
        buffer when it pleases), and the memory another process or the kernel may write (shared_mappings.py: the
        shared mappings, the threads' rseq areas). What the known states say is found once; a live process's
        mappings are read each time."""
        if self._known_sharing is None:
            cores = [core for core in (self.end_core, self.start_core) if core is not None]
            modules = self.process_trace.process.modules
            untraced = any(len(core.threads) > 1 for core in cores) or bool(self.process_trace.process.untraced_threads)
            ring = any(mapping.path.endswith(IO_URING) for core in cores for mapping in core.mapped_files)
            spans = shared_spans(cores, self._module_spans(), self.end_core)
            states = [self.end_state(tid) for tid in self.process_trace.tids]
            states += [core.state(thread.tid) for core in (self.start_core,) if core for thread in core.threads]
            known = [state for state in states if state is not None]
            pointers = {state.registers.get("fs_base") for state in known}
            files = [(module.path, module.load_address) for module in modules if module.path]
            spans += rseq_areas(files, known[0].read_memory, pointers) if known else []  # the kernel writes them too
            self._known_sharing = (untraced or ring, spans)
        shared, spans = self._known_sharing
        live = self.live_shared() if self.live_shared is not None else []
        shared = shared or len(self.process_trace.tids) > 1 or any(path.endswith(IO_URING) for _, _, path, _ in live)
        if live:
            return shared, [*spans, *live_shared_spans(live, self._module_spans())]
        if self.end_core is None and self.start_core is not None:  # no state at the end (the process exited): what
            return shared, [*spans, *unmapped(self.start_core.mapped)]  # the start maps nowhere may be gone or shared
        return shared, spans

    def _module_spans(self) -> list:
        """The traced modules as shared_mappings takes them: [(file paths, load address, size)]."""
        modules = self.process_trace.process.modules
        return [((module.system_path, str(module.path)), module.load_address, module.size) for module in modules]

    def _syscalls(self, tid: int, counted: _InstructionPositions) -> dict[int, SyscallResult]:
        """The recorded system calls' results, by position."""
        from .recovery import SyscallResult

        path = getattr(self.process_trace.thread(tid), "syscall_results", None)
        if path is None:
            return {}
        try:
            entries = read_syscall_results(path)
        except SyscallResultsError as error:
            raise ValuesError(str(error)) from None
        found = {}
        positions = counted.positions(np.array([entry[0] for entry in entries], dtype=np.int64)).tolist()
        for position, (_, kind, registers, memory, unknown_memory) in zip(positions, entries, strict=True):
            if 0 <= position < counted.count:  # at an instruction, not after the last
                before = kind == "signal frame"  # what the kernel wrote before a handler's first instruction
                found[position] = SyscallResult(registers, memory, unknown_memory, before=before)
        return found

    def _register_states(self, tid: int, counted: _InstructionPositions) -> tuple | None:
        """``(positions, rows, names)`` of the registers the recorder saw (``registerStates``), or None."""
        path = getattr(self.process_trace.thread(tid), "register_states", None)
        live = self.live_states(tid) if self.live_states is not None else None
        if live is not None:
            (instructions, rows), names = live, TRACKED
        elif path is None:
            return None
        else:
            try:
                instructions, rows, names = read_register_states(path, tid)
            except RegisterStatesError as error:
                raise ValuesError(str(error)) from None
        positions = counted.positions(instructions)
        kept = positions >= 0
        # A state after the trace's last instruction is where the thread stopped only where the recording ended
        # there too (the file's last state) and the trace's end is no gap (a truncated trace's is: it lost the
        # instructions between); else it is a state of later, when the thread stood elsewhere.
        ends = np.flatnonzero(positions == counted.count)
        if len(ends) and (ends[-1] != len(positions) - 1 or not counted.addresses[-1]):
            kept[ends] = False
        positions, rows = positions[kept], rows[kept]
        _check_pcs(path or "the live recorder's register states", positions, rows, names, counted.addresses)
        return positions, rows, names


def _check_pcs(source, positions: np.ndarray, rows: np.ndarray, names, addresses: np.ndarray) -> None:
    """Register states of another recording are refused: each state's rip is where the trace's instruction at
    that position is."""
    if "rip" not in names:
        return
    inside = positions < len(addresses)
    expected, seen = addresses[positions[inside]], rows[inside, list(names).index("rip")]
    wrong = np.flatnonzero(seen != expected)
    if len(wrong):
        k = int(wrong[0])
        raise ValuesError(
            f"{source}: at position {int(positions[inside][k])} rip is {int(seen[k]):#x} but the trace's instruction"
            f" there is at {int(expected[k]):#x}: the states are of another recording; record again, or remove the"
            " thread's registerStates"
        )


class _InstructionPositions:
    """Where the thread's N-th instruction (a recorder's count, from its first) is among the positions of
    ``addresses`` (the trace from position ``first`` on, gaps as 0), ``before`` instructions ran before them.

    A recorder counts the instructions its trace holds: an overflow it made loses none of its counts.  Any other
    gap (a decode error: a damaged or cut trace, code not in the image) lost instructions nobody counted, so the
    counts after the first such gap (``unsure``: its position; 0 when one is before ``first``) name no position."""

    def __init__(self, addresses: np.ndarray, before: int, unsure: int | None = None) -> None:
        self.instructions = np.flatnonzero(addresses)
        self._at = np.append(self.instructions, len(addresses))  # each count's position, the end after the last
        self.addresses = addresses
        self.before, self.count = before, len(addresses)
        # the counts a recorder's states may name: the instructions before the first gap it did not make
        self.placed = len(self.instructions) + 1 if unsure is None else int(np.searchsorted(self.instructions, unsure))

    def positions(self, counts: np.ndarray) -> np.ndarray:
        """The position of each count (the state before that instruction; after the last one: the end), -1 for
        those outside these positions."""
        local = counts.astype(np.int64) - self.before
        inside = (local >= 0) & (local <= len(self.instructions)) & (local < self.placed)
        found = np.full(len(local), -1, dtype=np.int64)
        found[inside] = self._at[local[inside]]
        return found


def position_addresses(decoded, expander, first=0) -> np.ndarray:
    """The address of each position's instruction from position ``first`` on, as uint64; 0 at a gap's."""
    found = np.zeros(decoded.item_count - first, dtype=np.uint64)
    for index, run in runs(decoded, first, expander):
        if isinstance(run, tuple):  # a block's addresses (a gap is a Gap)
            found[index - first : index - first + len(run)] = run
    return found


def interruptions(decoded, first=0) -> dict[int, int]:
    """position -> where the thread went, for each position after which tracing stopped at a known address and
    resumed elsewhere, though the jump may look like the instruction's own (a ret's, a ``call *``'s): an
    interrupt (Intel PT's FUP and TIP.PGD) after which the kernel sent the thread on to a signal's handler, or a
    branch out of the code traced (TIP.PGD with its target: the vdso the live recorder runs untraced), whose
    code ran unseen.  A system call's stop says no address: its own successor tells where it resumes."""
    found = {}
    for item in sorted({item for item, _ in decoded.events_of((EventType.ENABLED,)) if item > first}):
        stood = None
        for event in decoded.events_before(item):  # in order: a pause adds a stop and a resume at one address
            if event.type == EventType.ENABLED and stood is not None and event.ip != stood:
                found[item - 1 - first] = stood
            if event.type in (EventType.ENABLED, EventType.DISABLED, EventType.ASYNC_DISABLED):
                stood = None if event.type == EventType.ENABLED else event.ip
    return found


class TailValues:
    """A ThreadValues over a long trace's last MOST_POSITIONS positions, asked in the trace's positions: before
    them nothing is known (the recovery keeps every address it covers, and a whole long trace would not fit)."""

    def __init__(self, values: ThreadValues, first: int) -> None:
        self.values, self.first = values, first
        self.count = first + values.count

    @property
    def conflicts(self) -> int:
        return self.values.conflicts

    @property
    def volatile(self) -> list:
        return self.values.volatile

    def registers_at(self, position: int) -> dict[str, int | None]:
        if position < self.first:
            return dict.fromkeys(TRACKED)
        return self.values.registers_at(position - self.first)

    def memory_at(self, position: int, address: int, size: int) -> tuple[bytes, bytes]:
        if position < self.first:
            return bytes(size), bytes(size)
        return self.values.memory_at(position - self.first, address, size)

    def accesses(self, address: int, size: int, kinds=("write",)) -> list[Access]:
        return [replace(access, position=access.position + self.first) for access in
                self.values.accesses(address, size, kinds)]  # fmt: skip
