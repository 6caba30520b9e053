"""The instructions a thread will run from where it stands to its next branch.

The live recorder stops a thread only at branches it cannot see through.
From the current pc, straight-line code (fall-throughs, direct jumps and
calls) is known from the code alone; a conditional or indirect branch needs
the registers, which ``BranchEvaluator`` reads at the stop.  The look-ahead ends
at the first instruction whose successor is not known until the thread gets
there, or at a watched address (a breakpoint, a return address) where the
debugger must look.
"""

from ...x86.branches import BranchEvaluator
from ...x86.instructions import Transfer

MAX_AHEAD = 100_000  # a longer branch-free run is cut here (it is an endless loop of direct jumps)


class Lookahead:
    """Look-aheads in one process's code; straight lines are cached (code does not change under us)."""

    def __init__(self, classifier, read_memory):
        self.classifier = classifier
        self.evaluator = BranchEvaluator(read_memory)
        self._lines = {}  # (address, at_start) -> straight line, for the current watched set
        self._watched = None

    def ahead(self, pc, register, watched):
        """``[pc, ..., end]``: the thread runs every address but the last, then stands at ``end``.

        None when the instruction at ``pc`` must be single-stepped (its successor is not known).
        """
        insn = self.classifier[pc]
        if _ends_lookahead(insn):
            if insn.transfer not in (Transfer.CONDITIONAL, Transfer.INDIRECT) or insn.repeats:
                return None
            successor = self.evaluator.successor(pc, register)
            if successor is None:
                return None
            return [pc, *self._straight_line(successor, watched, False)]
        return self._straight_line(pc, watched, True)

    def _straight_line(self, address, watched, at_start):
        if watched is not self._watched:
            self._lines.clear()
            self._watched = watched
        key = (address, at_start)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self._walk(address, watched, at_start)
        return line

    def _walk(self, address, watched, at_start):
        """Addresses from ``address`` up to and including the next one the thread must stop at."""
        path = []
        seen = set()
        classifier = self.classifier
        while len(path) < MAX_AHEAD:
            if (address in watched and (path or not at_start)) or address in seen:
                break
            insn = classifier[address]
            if _ends_lookahead(insn):
                break
            path.append(address)
            seen.add(address)
            address = insn.straight_successor
        if address in seen and (address != path[0] or not at_start):
            # A loop of direct jumps: the thread stops where it first comes back.
            path = path[: path.index(address)]
        path.append(address)
        return path


def _ends_lookahead(insn):
    return insn.transfer not in (Transfer.OTHER, Transfer.DIRECT) or insn.repeats
