"""A thread's recorder: turns observed instruction steps into a PT stream and ground truth.

The stepping source (ptrace in ptrace_recorder/recording.py, LLDB's process control in
live_software/backend.py) reports, per thread, where the thread stands after
each step.  This module knows
nothing about how the steps are made: it classifies the instruction that just
ran, records it, and drives the thread's StreamWriter.
"""

from dataclasses import dataclass

from ...x86.instructions import Transfer
from .ground_truth import GroundTruth, InstructionCount
from .pt_writer import StreamWriter

# Module constants: the hot path compares plain ints, not enum attribute lookups.
_OTHER, _DIRECT, _CONDITIONAL, _INDIRECT, _FAR = (int(f) for f in Transfer)


def circular_psb_period(buffer_kb):
    """Bytes between PSBs for a circular buffer of ``buffer_kb`` KiB: a quarter of it up to the usual 4096, so
    that what it keeps holds a PSB to decode from (a circular trace starts at its first one)."""
    return min(4096, buffer_kb * 1024 // 4)


@dataclass
class RecorderOptions:
    psb_period: int = 4096
    clock: object = None  # a TSC source, or None for no timing packets
    overflow_at: int | None = None  # inject an overflow at this instruction index
    overflow_lost: int = 64  # instructions lost in the injected overflow
    keep_addresses: bool = True  # the ground truth's addresses (8 bytes each), or only their count
    untraced: tuple = ()  # (start, end) ranges of code not followed (the live recorder's vdso)
    mtc_period: int | None = None  # MTC packets every 2**mtc_period crystal clocks (with a clock)
    cycle_accurate: bool = False  # CYC packets (with a clock)


class ThreadRecorder:
    """One thread: the instruction it stands at, its stream, its ground truth."""

    def __init__(self, tid, ip, classifier, options):
        self.tid = tid
        self.current = ip
        self.classifier = classifier
        self.options = options
        self.writer = StreamWriter(options.psb_period, options.clock, options.mtc_period, options.cycle_accurate)
        self.truth = GroundTruth() if options.keep_addresses else GroundTruth(addresses=InstructionCount())
        self._overflow_state = "armed" if options.overflow_at is not None else "off"
        self._lost_start = 0
        self._enabled_in_gap = True
        # the instructions before this index a decoder reaches by the packets so far: those after it it decodes
        # only on reaching the next instruction that needs a packet
        self._confirmed = 0

    # Observations.

    def stepped(self, new_ip):
        """The instruction at ``current`` ran and the thread now stands at ``new_ip``."""
        current = self.current
        insn = self.classifier[current]
        if insn.repeats and new_ip == current:
            return  # another REP iteration: PT reports the instruction once
        transfer = insn.transfer
        if not _may_follow(insn, new_ip):
            if insn.emulated and _may_follow(self.classifier[insn.next_address], new_ip):
                self.stepped(insn.next_address)  # the kernel ran it (UMIP), and the step ran the next one too
                self.stepped(new_ip)
                return
            # Not a successor: the instruction never ran.  A signal was delivered before it (by a
            # debugger that does not report it) and the step ran the handler's first instruction.
            self.signalled(new_ip)
            return
        addresses = self.truth.addresses
        index = len(addresses)
        addresses.append(current)
        writer = self.writer
        if self._overflow_state == "off" and writer.enabled:
            # The common cases, kept short: no packet, or one TNT bit.
            if transfer == _CONDITIONAL:
                writer.conditional(new_ip != insn.next_address)
                self.current, self._confirmed = new_ip, index + 1
                return
            if transfer == _DIRECT:
                self.current = new_ip
                return
            if transfer == _OTHER and not insn.repeats:
                if writer.written - writer.last_psb >= writer.psb_period:
                    writer.resync(current, index)
                self.current = new_ip
                return
        if self._overflow_state == "lost":
            self._step_in_gap(insn, index, new_ip)
        else:
            self._step_traced(insn, index, new_ip)
        self.current = new_ip

    def signalled(self, handler_ip):
        """A signal handler starts at ``handler_ip`` before ``current`` ran."""
        if self._overflow_state == "lost":
            self._enabled_in_gap = False
        elif self.writer.enabled:
            self.writer.interrupt(self.current)
        self.current = handler_ip

    def untraced(self, new_ip):
        """From ``current`` the thread ran code the recorder does not follow (the vdso) and now stands at ``new_ip``.

        The stream shows tracing off in between (TIP.PGD with the branch target, or FUP + TIP.PGD
        where the thread stood in that code, then TIP.PGE at ``new_ip``), as a PT address filter
        shows code outside its ranges: no instruction is invented or lost.
        """
        if self._overflow_state != "lost":
            self.writer.end(self.current)
        self.current = new_ip

    def lost(self, new_ip):
        """The thread went from ``current`` to ``new_ip`` along an unknown path: a gap, as after an overflow.  The
        instructions since the last packet are lost with it: a decoder meets the overflow where it next needs a
        packet, before them (so a known state kept there names no position in the trace)."""
        if self._overflow_state != "lost":
            ran = len(self.truth.addresses)
            if not self.writer.enabled:
                self.writer.enable(self.current, ran)
            elif self._confirmed < ran:
                self.truth.lost.append((self._confirmed, ran))
            self.writer.overflow()
            self.writer.resume(new_ip)
        self.current = new_ip

    def exited(self):
        """The thread is gone; an exit syscall at ``current`` ran."""
        if self.classifier[self.current].transfer == Transfer.FAR:
            self.truth.addresses.append(self.current)
            if self.writer.enabled and self._overflow_state != "lost":
                self.writer.leave()
        self.stop("exited")

    def stop(self, reason):
        """Recording ends with the thread standing at ``current``."""
        self._close_gap(len(self.truth.addresses), resume=False)
        self.writer.end(self.current)
        self.truth.ended = reason

    # Writing.

    def _step_traced(self, insn, index, new_ip):
        writer = self.writer
        if not writer.enabled:
            writer.enable(self.current, index)
            self._confirmed = index
        elif insn.transfer == Transfer.OTHER and not insn.repeats:
            writer.resync(self.current, index)
        transfer = insn.transfer
        if transfer in (Transfer.CONDITIONAL, Transfer.INDIRECT, Transfer.FAR):
            self._confirmed = index + 1
        if transfer == Transfer.CONDITIONAL:
            writer.conditional(new_ip != insn.next_address)
        elif transfer == Transfer.INDIRECT:
            if any(start <= new_ip < end for start, end in self.options.untraced):
                writer.branch_out(new_ip)
            else:
                writer.indirect(new_ip)
        elif transfer == Transfer.FAR:
            writer.leave()
        if self._overflow_due(index) and transfer in (Transfer.CONDITIONAL, Transfer.INDIRECT) and writer.enabled:
            # Right after a packet-carrying branch, so decoders lose exactly what follows.
            writer.overflow()
            self._overflow_state = "lost"
            self._lost_start = index + 1
            self._enabled_in_gap = True

    def _overflow_due(self, index):
        return self._overflow_state == "armed" and index >= self.options.overflow_at

    def _step_in_gap(self, insn, index, new_ip):
        if insn.transfer == Transfer.FAR:
            self._enabled_in_gap = False
        if (
            index - self._lost_start >= self.options.overflow_lost
            and insn.transfer == Transfer.OTHER
            and not insn.repeats
        ):
            # Tracing comes back before this instruction, which is traced again.
            self._close_gap(index, resume=True)
            self._step_traced(insn, index, new_ip)

    def _close_gap(self, index, resume):
        if self._overflow_state != "lost":
            return
        self._overflow_state = "done"
        self.truth.lost.append((self._lost_start, index))
        if resume and self._enabled_in_gap:
            self.writer.resume(self.current)
        else:
            self.writer.enabled = False  # the next instruction re-enables with TIP.PGE

    def paused(self, buffer_bytes=None):
        """The stream so far, at a debugger stop: tracing pauses at ``current`` and resumes with the next step.

        With ``buffer_bytes``, only the newest bytes are kept, as a circular buffer would.
        """
        self.writer.end(self.current)
        data = self.writer.snapshot()
        return data[-buffer_bytes:] if buffer_bytes and len(data) > buffer_bytes else data

    def finish(self, buffer_bytes=None):
        """The thread's stream; with ``buffer_bytes``, only its newest bytes (a circular snapshot)."""
        data = self.writer.finish()
        if buffer_bytes and len(data) > buffer_bytes:
            cut = len(data) - buffer_bytes
            kept = [index for offset, index in self.writer.psbs if offset >= cut]
            self.truth.snapshot_from = kept[0] if kept else len(self.truth.addresses)
            data = data[cut:]
        return data


def _may_follow(insn, new_ip):
    """Whether the thread may stand at ``new_ip`` after ``insn`` ran (an indirect or far one: anywhere)."""
    if insn.transfer == _OTHER:
        return new_ip == insn.next_address
    if insn.transfer == _DIRECT:
        return new_ip == insn.target
    if insn.transfer == _CONDITIONAL:
        return new_ip in (insn.next_address, insn.target)
    return True
