"""The live software recorder's backend: what a thread stepped by LLDB ran, written as an Intel PT stream.

The debugger layer (debugger/recording_plan.py) moves the thread through
LLDB's own process control and tells this backend where it went: a single
step, a run along the addresses ahead to the next branch, a predicted
stretch to check against the thread's registers, or an untraced run through
the vdso.  The backend needs
only ``read(address, size)`` for the process's memory and ``pc(tid)`` for
where a thread stands, so it holds no LLDB object and works from plain Python.
"""

import time

import numpy as np

from ...values.machine_state import TRACKED
from ...x86.instructions import Classifier, Transfer
from ..cpu import SOFTWARE_CPU
from ..encoder.state_ring import StateRing
from ..encoder.thread_recorder import RecorderOptions, ThreadRecorder
from ..process_view import ProcessMemory
from . import emulation
from .lookahead import Lookahead


class UntracedRun:
    """A run the recorder does not follow: the vdso, run at full speed back to ``end`` (its caller).

    Its clock functions retry until they read the time within one kernel tick; stepped through
    LLDB, each try takes longer than a tick, so they would never return.
    """

    def __init__(self, end):
        self.end = end


class SoftwareBackend:
    """The recorder's per-thread recorders; a thread's bytes are produced once per stop.

    ``pending`` holds, per thread, the run it was sent along (the addresses ahead, a Prediction or an
    UntracedRun) until the thread arrives and the run is recorded.
    """

    name = "software recorder"
    cpu = SOFTWARE_CPU  # the packet scheme is checked to decode exactly with this CPU's errata
    all_threads = False
    drives_stepping = True  # continue/next/step/finish run through the recording plan

    def __init__(self, pid, tids, read, pc, buffer_kb=0, tsc=False, psb_period=0, vdso=None, keep_addresses=False):
        """Keep the newest ``buffer_kb`` KiB (all with 0), time with ``tsc``, write PSBs every ``psb_period`` bytes.

        ``vdso`` is its ``(start, end)``: run untraced.  ``keep_addresses`` keeps every recorded address
        (tests compare them with the decoded trace), 8 bytes each.
        """
        self.pc = pc
        self.buffer_bytes = buffer_kb * 1024 if buffer_kb else None
        self.vdso = vdso
        self.classifier = Classifier(read)
        self.lookahead = Lookahead(self.classifier, read)
        self.process_memory = _process_memory(pid)
        self.predictor = emulation.Predictor(self._page_reader(read))
        clock = time.monotonic_ns if tsc else None
        untraced = (vdso,) if vdso else ()
        options = RecorderOptions(psb_period or 4096, clock, keep_addresses=keep_addresses, untraced=untraced)
        self.recorders = {tid: ThreadRecorder(tid, pc(tid), self.classifier, options) for tid in tids}
        self.pending = {}
        self._bytes = {}
        self._generations = dict.fromkeys(tids, 0)
        self.single_steps = dict.fromkeys(tids, 0)
        self.predictions = dict.fromkeys(tids, 0)  # stretches run as predicted
        self.mispredictions = dict.fromkeys(tids, 0)  # stretches lost: the thread did not end as predicted
        self.states = StateRing(len(TRACKED), range(len(TRACKED)))  # the registers at each stop (values)
        self._last_state = {}  # tid -> (instruction index, pc) of its last state kept

    def stepped(self, tid, pc):
        self.single_steps[tid] += 1
        self.ran(tid, (pc,))

    def ran(self, tid, pcs):
        """The thread ran one instruction per pc in ``pcs``, each pc where it stood next."""
        recorder = self.recorders[tid]
        for pc in pcs:
            recorder.stepped(pc)
        self._changed(tid)

    def lost(self, tid, pc):
        """The thread's path to ``pc`` is unknown (a misprediction): the trace shows a gap there."""
        self.mispredictions[tid] += 1
        self.recorders[tid].lost(pc)
        self._changed(tid)

    def _changed(self, tid):
        self._bytes.pop(tid, None)
        self._generations[tid] += 1

    def arrived(self, tid, pc, registers=None):
        """The thread stopped at ``pc`` on the run it was sent along (``pending``): record that run.

        ``registers(names)`` gives the thread's registers, to check a prediction against.  Without
        it (a stop the plan never saw: a crash, an interrupt), where in a predicted stretch the
        thread stopped cannot be told, and only a gap is recorded.
        """
        run = self.pending.pop(tid, None)
        if isinstance(run, UntracedRun):
            self.recorders[tid].untraced(pc)
            self._changed(tid)
        elif not isinstance(run, emulation.Prediction):
            steps = executed(run, pc) if run is not None else None
            if steps is not None:
                self.ran(tid, steps)
            elif run is not None:  # off the run: a signal's handler ran, unseen, to where LLDB stopped the thread
                self.lost(tid, pc)
        elif registers and pc == run.end and emulation.matches(run.registers, registers(run.registers)):
            self.predictions[tid] += 1
            self.ran(tid, run.steps())
        elif registers or pc != self.recorders[tid].current:
            self.lost(tid, pc)

    def keep_state(self, tid, pc, registers):
        """Thread ``tid`` stands at ``pc`` before its next instruction with ``registers`` (TRACKED names): a
        known state there.  Another round of a REP instruction keeps the state before its first."""
        index = len(self.recorders[tid].truth.addresses)
        if self._last_state.get(tid) == (index, pc):
            return
        self._last_state[tid] = (index, pc)
        self.states.keep(tid, index, np.array([registers[name] for name in TRACKED], dtype=np.uint64).tobytes())

    def state_arrays(self, tid):
        """``(instruction counts, rows)`` of thread ``tid``'s states in its trace (values/register_states.py), each
        counted among the instructions the trace holds; None with a circular buffer, whose trace begins at an
        instruction the count does not say."""
        recorder = self.recorders.get(tid)
        if recorder is None or self.buffer_bytes:
            return None
        found = self.states.arrays(tid)
        if found is None:
            return None
        where = recorder.truth.traced(found[0])  # counts of instructions the trace holds (a gap loses some)
        kept = where >= 0
        return where[kept].astype(np.uint64), found[1][kept]

    def catch_up(self, tid):
        """Record the run a signal stop ended unseen by the plan (when the trace is read, or a command starts); a
        thread that is gone (killed by a signal as it resumed) ran none of it that anyone saw: its trace ends where
        it last stood."""
        if tid in self.pending:
            pc = self.pc(tid)
            if pc is not None:
                self.arrived(tid, pc)
            else:
                self.pending.pop(tid)

    def trace_bytes(self, tid):
        if tid not in self.recorders:
            return None
        self.catch_up(tid)
        if tid not in self._bytes:
            self._bytes[tid] = self.recorders[tid].paused(self.buffer_bytes)
        return self._bytes[tid] or None

    def generation(self, tid):
        if tid in self.recorders:
            self.catch_up(tid)
        return self._generations.get(tid, 0)

    def snapshot(self):
        """Every thread's trace now (for ``pt stop``)."""
        return {tid: self.trace_bytes(tid) for tid in self.recorders}

    def at_far_transfer(self, tid):
        """Whether the thread stands at a system call or other far transfer."""
        return self.classifier[self.recorders[tid].current].transfer == Transfer.FAR

    def steps(self, tid):
        return len(self.recorders[tid].truth.addresses)

    def _page_reader(self, read):
        """Reads for the emulator: /proc/PID/mem (20 times faster than through LLDB) where allowed.

        Those bytes include LLDB's breakpoint instructions, which the emulator never runs past.
        """
        if self.process_memory is None:
            return read

        def read_page(address, size):
            data = self.process_memory.read(address, size)
            return data if len(data) == size else read(address, size)

        return read_page

    def close(self):
        if self.process_memory is not None:
            self.process_memory.close()


def _process_memory(pid):
    """The process's memory through /proc, or None (not a local process, or ptrace rules forbid it)."""
    try:
        return ProcessMemory(pid)
    except OSError:
        return None


def executed(ahead, pc):
    """The successive pcs of a run along ``ahead`` (its start, its stops, its end) that stopped at ``pc``.

    Normally ``pc`` is the end of ``ahead``; a user breakpoint on the way stops it early.  A pc off
    the way: None.  Something asynchronous moved the thread (a signal's handler ran, and LLDB stopped
    it there or further on: a breakpoint in the handler, the next signal), along a path nobody saw.
    """
    if pc == ahead[-1]:
        return ahead[1:]
    if pc in ahead[1:-1]:
        return ahead[1 : ahead.index(pc, 1) + 1]
    return [] if pc == ahead[0] else None
