"""What reverse-step, reverse-next and reverse-finish SHOULD answer, from every instruction's frames and line.

GDB 13 is the reference, but it is wrong in known places (a line's second line-table row, a `for`
line split in two address ranges, reverse-finish under recursion).  This small model states the
rules the project follows, so the capture can mark those steps:

- A line is a run of consecutive instructions of one frame with one line number; the instructions
  of functions it calls do not break the run.
- reverse-next goes to the start of the current run when mid-run, else to the start of the run
  before it in the same frame; leaving the function backward (out of its first line or prologue)
  goes on to the start of the calling line's run, or stops at the call when the caller has no
  line information (GDB stops at once in code without lines).  A function without line
  information is one run of such instructions.
- reverse-step does the same, but a callee with line information that returns into the walk is
  entered: it stops at the start of the last run executed there (and so on, deeper).  A callee
  that returned to a run's first instruction was called by the line before: a walk from the
  middle of the run stops before it; from the run's first instruction, reverse-step enters it.
- reverse-finish goes to the call instruction that created the current activation.
- next, step and finish over a non-local exit (longjmp, a caught throw) stop where the jump lands,
  as GDB's longjmp and exception breakpoints make them do where GDB can see the jump.

Rows are the instructions of the trace (index = trace position), each a Row: the frame ids from
frame #0 outwards (GDB's {stack, code} ids: stable for one activation) and frame #0's line (None
without line information).  None means "not modelled" (functions without line information,
history's start): no expectation is then recorded.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    chain: tuple  # frame ids, frame #0 first
    line: tuple | None  # (file, line) of frame #0, None without line information
    trampoline: bool = False  # frame #0 is a signal trampoline (the kernel's frame, not a call's)
    returns: bool = False  # the instruction is a return

    @property
    def frame(self):
        return self.chain[0]


class Model:
    def __init__(self, rows, end_row):
        self.rows = [*rows, end_row]  # rows[count] describes where the thread stopped

    def reverse_finish(self, position):
        """The call instruction that created the activation running at ``position``."""
        if self.rows[position].trampoline:
            return None  # no call made it
        frame = self.rows[position].frame
        index = position - 1
        while index >= 0 and frame in self.rows[index].chain:
            index -= 1
        if index < 0 or len(self.rows[position].chain) < 2 or self.rows[index].frame != self.rows[position].chain[1]:
            return None
        return index

    def reverse_step(self, position, into):
        """Where reverse-step (``into``) or reverse-next lands from ``position``."""
        row = self.rows[position]
        if position == 0:
            return None
        frame, line = row.frame, row.line
        start, index, entered = self._walk(position, frame, line, into)
        if entered is not None:
            return entered
        if start != position:  # mid-run: the start of the current line, or of the calling one from a prologue
            return self._calling_line(index, into) if self._left_through_entry(index, frame) else start
        if index < 0:
            return None
        previous = self.rows[index]
        if previous.frame != frame and frame not in previous.chain:  # the run began at the function's entry
            return self._calling_line(index, into)
        if previous.frame != frame:  # a call the line before made returned to this run's first instruction
            if into and previous.line is not None:
                callee_start, _, entered = self._walk(index + 1, previous.frame, previous.line, into, first=index)
                return entered if entered is not None else callee_start
            index = self._back_to(index, frame)
            if index < 0:
                return None
        start, before, entered = self._walk(index + 1, frame, self.rows[index].line, into, first=index)
        if entered is not None:
            return entered
        if self._left_through_entry(before, frame):  # the previous run is the prologue: on to the caller
            return self._calling_line(before, into)
        return start

    def mid_run(self, position):
        """Whether an earlier instruction of the same frame continues into ``position`` on the same line."""
        row = self.rows[position]
        return row.line is not None and self._walk(position, row.frame, row.line, into=False)[0] != position

    def _walk(self, position, frame, line, into, first=None):
        """Walk back over the run of ``line`` in ``frame`` ending just before ``position``.

        Returns (the run's first index, the index where the walk stopped, the stop inside an entered
        callee or None).  ``first`` is an index already known to be in the run.
        """
        start = position if first is None else first
        index = start - 1
        while index >= 0:
            row = self.rows[index]
            if row.frame == frame:
                if row.line != line:
                    break
                start = index
                index -= 1
            elif frame in row.chain:  # a callee returned into the run
                call = self._back_to(index, frame)
                if call < 0 or self.rows[call].line != line:
                    break  # called by the line before: the run starts after it
                if into and row.line is not None:
                    callee_start, _, entered = self._walk(index + 1, row.frame, row.line, into, first=index)
                    return start, index, entered if entered is not None else callee_start
                index = call
            else:
                break
        return start, index, None

    def _back_to(self, index, frame):
        """From inside a callee, the last earlier instruction of ``frame`` (the call)."""
        while index >= 0 and self.rows[index].frame != frame:
            index -= 1
        return index

    def _left_through_entry(self, index, frame):
        return index >= 0 and self.rows[index].frame != frame and frame not in self.rows[index].chain

    def _calling_line(self, index, into):
        """The start of the calling line's run, ``index`` being the call instruction in the caller."""
        row = self.rows[index]
        if row.line is None:
            return index
        start, _, entered = self._walk(index + 1, row.frame, row.line, into, first=index)
        return entered if entered is not None else start

    def forward_landing(self, position):
        """Where a non-local exit ends next/step/finish from ``position``: the instruction a longjmp or a
        caught throw lands on, when it leaves ``position``'s frame or a call it makes; else None."""
        frame, outer = self.rows[position].frame, self.rows[position].chain[1:]
        index = position + 1
        while index < len(self.rows) and frame in self.rows[index].chain:
            row, previous = self.rows[index], self.rows[index - 1]
            returned = (previous.returns and previous.chain[1:2] == (frame,)) or previous.trampoline
            if row.frame == frame and previous.frame != frame and not returned:
                return index  # a call it made was left by a jump back into this frame
            index += 1
        if index >= len(self.rows) or self.rows[index - 1].frame == frame:
            return None  # the frame returned (or history ended)
        for landing in range(index, len(self.rows)):  # it was jumped out of: where the jump lands
            if self.rows[landing].frame == frame:
                return None  # switched away and back (swapcontext): no jump out
            if self.rows[landing].frame in outer:
                return landing
        return None
