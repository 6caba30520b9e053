"""The registers before each instruction the recorder steps: a known state at every position (registerStates).

Stepping, the recorder stops before every instruction anyway; one PTRACE_GETREGS
there (instead of reading rip alone) gives the whole state, kept in a StateRing.
"""

import ctypes

from ...values.machine_state import TRACKED
from ..encoder.state_ring import StateRing
from . import ptrace

_COLUMNS = [ptrace.USER_REGS.index(ptrace.PTRACE_NAMES.get(name, name)) for name in TRACKED]
_RIP = ptrace.USER_REGS.index("rip")


class RegisterLog(StateRing):
    """Every recorded thread's states: ``read`` at each stop, ``keep`` once the stop's place in the trace is known."""

    def __init__(self):
        super().__init__(len(ptrace.USER_REGS), _COLUMNS)
        self._regs = (ctypes.c_ulonglong * len(ptrace.USER_REGS))()

    def read(self, tid):
        """Reads thread ``tid``'s registers (one system call); returns its rip."""
        ptrace.read_regs(tid, self._regs)
        return self._regs[_RIP]

    def keep_read(self, tid, index):
        """The registers ``read`` last are the state before thread ``tid``'s ``index``-th instruction."""
        self.keep(tid, index, bytes(self._regs))
