"""The traced process as a remote target replaying its history: threads, positions, breakpoints, watchpoints.

Each thread replays its own history and keeps its own position, as GDB's
btrace does: resuming moves only the thread the client resumes and the
others stay where they are.  A trace's threads are recorded one stream each,
and most bundles (the software recorders', per-thread perf.data) carry no
common clock to merge them by; a merged timeline would order threads only
where timestamps exist, and would make one thread's step move the others.

Movements are ``lldb_trace.history``'s (GDB's rules); what a thread shows at
its position is what the debugger layer shows LLDB (``shown_state``): the
core at the end of a trace with a core, the recovered values elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..api import ThreadTrace, Trace
from ..debugger.shown_state import ShownState, shown_state
from ..errors import LldbTraceError
from ..history import NO_MORE_HISTORY, HistoryError, Movement
from ..progress import WorkInterruptedError
from ..values.process_values import values_of

SIGTRAP, SIGINT = 5, 2
MOST_RANGE_STEPS = 10_000  # instructions one vCont;r runs before it answers (a hot loop in one line)
WATCH_KINDS = {2: ("write",), 3: ("read",), 4: ("read", "write")}  # Z2/Z3/Z4
WATCH_REASONS = {2: "watch", 3: "rwatch", 4: "awatch"}
# A forward resume at the end of history, which cannot move: GDB reads ``replaylog:end``; LLDB's step-in and
# step-out plans take that history boundary for a stop of their own and resume again without end (LLDB counts
# it among the stops a step explains), so LLDB is also told ``reason:exception`` (a stop no plan explains),
# which it reads after the replaylog key and shows with this description.
_AT_THE_END = b"history boundary: the trace ends here"


class NoSuchThreadError(LldbTraceError):
    """A packet named a thread the trace does not have."""


@dataclass(frozen=True)
class Stop:
    """Why a thread stopped: a signal number, and the stop reply's ``reason:value`` pairs besides ``thread``."""

    tid: int
    signal: int = SIGTRAP
    reasons: tuple[tuple[str, str], ...] = ()


@dataclass
class Watchpoint:
    kind: int  # 2 write, 3 read, 4 access (the Z packet's type)
    address: int
    size: int


@dataclass
class Replay:
    """The served process: ``trace`` (an api.Trace) and its first traced process's threads."""

    trace: Trace
    threads: dict[int, ThreadTrace] = field(init=False)
    breakpoints: dict[int, int] = field(default_factory=dict)  # address -> Z type (0 software, 1 hardware)
    watchpoints: list[Watchpoint] = field(default_factory=list)
    interrupted: bool = False  # the client sent Ctrl-C: long work stops
    _watched: tuple = (None, None)  # the last _watch_stops answer and what it was for
    _shown: tuple = (None, None)  # ((tid, position), ShownState) last shown

    def __post_init__(self) -> None:
        if not self.trace.processes:
            raise LldbTraceError(
                f"{self.trace.bundle.path} holds no process (only a kernel): there is nothing to serve"
            )
        process_trace = self.trace.processes[0]
        traced = [thread for thread in self.trace.threads if thread.process_trace is process_trace]
        self.threads = {thread.tid: thread for thread in traced if process_trace.has_trace(thread.tid)}
        if not self.threads:
            raise LldbTraceError(f"{self.trace.bundle.path}: no thread of process {process_trace.pid} has a trace")
        self.process_trace = process_trace
        for thread in self.threads.values():  # a new client finds every thread where its trace ends
            thread.history.goto(thread.history.end)
        stopped = process_trace.stopped_tid
        self.current = stopped if stopped in self.threads else next(iter(self.threads))  # Hg: registers, memory
        self.chosen_for_resume: int | None = None  # Hc's thread; None: any or all (Hc0, Hc-1): see resumed
        self.focus = self.current  # the client's thread: its Hg, or the thread a stop of a resume of any showed
        self.last_stop = self.initial_stop(self.current)

    @property
    def pid(self) -> int:
        return self.process_trace.pid

    def thread(self, tid: int) -> ThreadTrace:
        found = self.threads.get(tid)
        if found is None:
            raise NoSuchThreadError(f"no thread {tid:#x} in the trace")
        return found

    def select(self, tid: int, for_resume: bool) -> None:
        """``Hg``/``Hc``: ``Hg`` 0 (any) and -1 (all) keep the current thread; after ``Hc`` 0 or -1 a resume moves
        the client's thread (``resumed``)."""
        if tid > 0:
            self.thread(tid)
        if for_resume:
            self.chosen_for_resume = tid if tid > 0 else None
        elif tid > 0:
            self.current = self.focus = tid

    @property
    def resumed(self) -> int:
        """The thread a resume without a thread of its own moves: Hc's, else the client's thread.  GDB sends
        ``Hc0`` before ``bs``/``bc`` unless scheduler-locking is on, and a replay moves one thread at a time:
        the one the user selected (``Hg``), or the one the last stop of such a resume showed.  A stop of a resume
        aimed at one thread (``Hc<tid>``: GDB stepping another thread off its breakpoint first) does not change
        it, though it makes that thread the current one for registers and memory."""
        return self.focus if self.chosen_for_resume is None else self.chosen_for_resume

    def stopped(self, stop: Stop) -> None:
        """A stop reply sent: its thread is the current one (the protocol's rule), and the client's own after a
        resume of any thread."""
        self.last_stop, self.current = stop, stop.tid
        if self.chosen_for_resume is None:
            self.focus = stop.tid

    def initial_stop(self, tid: int) -> Stop:
        """What ``?`` says before any movement: the signal the thread stopped with, where its trace ends."""
        stop = self.process_trace.thread_stop(tid)
        signal = stop.signal if stop is not None and stop.signal else SIGTRAP
        return Stop(tid, signal)

    # -- what a thread shows ---------------------------------------------------------------------------

    def state(self, tid: int | None = None) -> ShownState:
        """What the thread shows at its position, made once per position: a stop costs a client dozens of g, p
        and m packets."""
        tid = self.current if tid is None else tid
        history = self.thread(tid).history
        key = (tid, history.position)
        if self._shown[0] != key:
            self._shown = (key, shown_state(self.process_trace, tid, history, history.pc, unwinding=False))
        return self._shown[1]

    def read_memory(self, address: int, size: int, tid: int | None = None) -> bytes:
        """The known bytes from ``address`` on at the thread's position (fewer than ``size`` where one is not)."""
        return self.state(tid).read_memory(address, size)

    # -- movements ---------------------------------------------------------------------------------------

    def step(self, tid: int, reverse: bool) -> Stop:
        self._not_interrupted()
        history = self.thread(tid).history
        start = history.position
        movement = history.stepi(reverse)
        return self._stop(tid, start, movement, reverse)

    def range_step(self, tid: int, low: int, high: int) -> Stop:
        """``vCont;r``: step forwards while the pc stays in ``low..high`` (a line), stopping as a step would, at a
        breakpoint inside the range, when the client interrupts, or after MOST_RANGE_STEPS (the protocol lets a
        range step stop early: the client sends another)."""
        self._not_interrupted()
        history = self.thread(tid).history
        for _ in range(MOST_RANGE_STEPS):
            start = history.position
            stop = self._stop(tid, start, history.stepi(False), False)
            pc = history.pc
            if stop.reasons or history.position == start or pc is None or not low <= pc < high:
                return stop
            if pc in self.breakpoints:
                self.last_stop = Stop(tid, SIGTRAP, (("hwbreak" if self.breakpoints[pc] == 1 else "swbreak", ""),))
                return self.last_stop
            if self.interrupted:
                self.last_stop = Stop(tid, SIGINT)
                return self.last_stop
        return self.last_stop

    def continue_(self, tid: int, reverse: bool) -> Stop:
        self._not_interrupted()
        history = self.thread(tid).history
        start = history.position
        positions, _ = self._watch_stops(tid, reverse)
        movement = history.continue_(self.breakpoints, reverse, positions)
        return self._stop(tid, start, movement, reverse)

    def _not_interrupted(self) -> None:
        """A resume the client interrupted before it began (0x03 right behind it) does not move."""
        if self.interrupted:
            raise WorkInterruptedError("interrupted before the thread moved")

    def goto(self, tid: int, position: int) -> Movement:
        return self.thread(tid).history.goto(position)

    def _stop(self, tid: int, start: int, movement: Movement, reverse: bool) -> Stop:
        """The stop reply's reasons: the end of history, a watched access the movement ran (or, in reverse, undid)
        last, or a breakpoint it stopped at."""
        history = self.thread(tid).history
        reasons: list[tuple[str, str]] = []
        if movement.message == NO_MORE_HISTORY:
            reasons.append(("replaylog", "begin" if reverse else "end"))
            if not reverse and movement.position == start:  # LLDB's reason, after GDB's replaylog (see _AT_THE_END)
                reasons += [("reason", "exception"), ("description", _AT_THE_END.hex())]
        elif movement.position != start:
            watchpoint = self._watch_stops(tid, reverse)[1].get(history.position)
            if watchpoint is not None:
                reasons.append((WATCH_REASONS[watchpoint.kind], f"{watchpoint.address:x}"))
            elif movement.breakpoint is not None and movement.breakpoint in self.breakpoints:
                kind = self.breakpoints[movement.breakpoint]
                reasons.append(("hwbreak" if kind == 1 else "swbreak", ""))
        self.last_stop = Stop(tid, SIGTRAP, tuple(reasons))
        return self.last_stop

    # -- watchpoints -------------------------------------------------------------------------------------

    def can_watch(self, tid: int | None = None) -> bool:
        """Whether the values along the thread's history are recovered (the trace has a known state)."""
        return values_of(self.process_trace).thread(self.current if tid is None else tid) is not None

    def _watch_stops(self, tid: int, reverse: bool) -> tuple[np.ndarray, dict[int, Watchpoint]]:
        """Sorted positions where the watchpoints stop a movement, and which one stops there.  Forwards, right
        after the instruction that accessed the bytes; backwards, at that instruction, the access undone (the
        memory holds the value from before it, so GDB shows the write's old and new values, as rr does)."""
        key = (tid, tuple((w.kind, w.address, w.size) for w in self.watchpoints))
        if self._watched[0] != key:
            values = values_of(self.process_trace).thread(tid) if self.watchpoints else None
            accessed: dict[int, Watchpoint] = {}
            for watchpoint in self.watchpoints:
                if values is None:
                    break
                for access in values.accesses(watchpoint.address, watchpoint.size, WATCH_KINDS[watchpoint.kind]):
                    if access.exact:
                        accessed.setdefault(access.position, watchpoint)
            self._watched = (key, accessed)
        shift = 0 if reverse else 1
        stops = {position + shift: watchpoint for position, watchpoint in self._watched[1].items()}
        return np.array(sorted(stops), dtype=np.int64), stops


def check_position(replay: Replay, tid: int, text: str) -> int:
    """A position named by the client (``begin``, ``end`` or a number) for thread ``tid``."""
    history = replay.thread(tid).history
    word = text.strip()
    if word == "begin":
        return 0
    if word == "end":
        return history.end
    try:
        return int(word, 0)
    except ValueError:
        raise HistoryError(f"'{word}' is no position: give begin, end or an instruction number") from None
