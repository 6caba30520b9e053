"""Where a thread's history shows the kernel's signal machinery (signals.py): each rt_sigreturn, and each jump
to a handler that is a signal delivery.

A jump the trace cannot explain is a delivery when either
- *paired*: a later rt_sigreturn resumes at a successor of the instruction
  before it, with no other unexplained jump between, and the instruction is
  no conditional or indirect branch (the frame saved where it went, which the
  handler could have changed; a successor is then not proof); or
- *proven* by the end state, where the handler has not returned (a crash in
  a handler, a trace that ends in one): once a window is solved with the jump
  as a cut, the word at the handler's rsp is the address of an rt_sigreturn
  trampoline (``mov rax, 15; syscall``), the frame's rip slot holds a
  successor of the instruction, and rax, rdx and rsi, where known, are what
  the kernel sets.  The window is then solved again with the delivery.

Where the trace says where the thread stood when it was interrupted (Intel
PT's FUP before an asynchronous TIP.PGD: ``ThreadValues.interrupted``), that
address is the only successor, and a branch's delivery is paired too.

A recorded one (its system call's results or its frame saved) is paired the same way: the recorder saw
the frame and the call's writes, and what the pairing adds, that nothing else changed between, carries the rest
of memory across (a cut lost every stack byte the handler did not touch).
"""

import numpy as np

from ..x86.instructions import Transfer
from . import signals
from .registers import RAX, RDX, RSI, RSP

_SEARCH = 1 << 20  # positions a signal handler may run before its rt_sigreturn is looked for no further
_WORD = 8


class Deliveries:
    """The signals of one ThreadValues' history: ``mark`` a window's effects and cuts, ``prove`` from its solution."""

    def __init__(self, values):
        self.values = values
        self.proven = {}  # position -> where the thread was to resume (the frame's rip slot)
        self._sigreturns = {}  # address -> the Effect of a syscall there that runs rt_sigreturn
        self._tried = set()  # positions whose frame was looked at
        self._returns = None  # positions of an rt_sigreturn trampoline's first instruction, found on first use

    def mark(self, low, effects, cuts):
        """Turns the window's rt_sigreturn ``syscall``s into signals.sigreturn effects, and its deliveries into
        instructions that carry across (cuts False); returns ``{i: resume}`` of the deliveries."""
        deliveries = {}
        for k, position in enumerate(range(low, low + len(effects))):
            if effects[k] is not None and effects[k].kind == "syscall" and self.sigreturn_at(position):
                effects[k], cuts[k] = self._sigreturn(effects[k]), False
            elif effects[k] is not None and effects[k].kind == "syscall" and self._unknown_call(position):
                effects[k] = signals.unknown_call(effects[k])
            elif cuts[k] and (resume := self.proven.get(position, self._paired(position))) is not None:
                deliveries[k], cuts[k] = resume, False
        return deliveries

    def prove(self, low, chunk):
        """Looks at each delivery-shaped cut of the solved window beginning at ``low`` (see the module doc); True
        when one is proven, and the window must be solved again."""
        values, found = self.values, False
        for i, cut in enumerate(chunk.structure.cuts):
            position = low + i
            if not cut or position in self._tried or not self._candidate(position):
                continue
            frame = chunk.register(RSP, i + 1)
            if frame is None:
                continue
            self._tried.add(position)
            words = [_word(chunk, i + 1, frame + offset) for offset in (0, signals.RIP_SLOT)]
            if None in words or not self.trampoline(words[0]):
                continue
            effect = values._effect(values.addresses[position])
            kernel = {RAX: 0, RDX: frame + signals.UCONTEXT, RSI: frame + signals.SIGINFO}
            if not self._resumes(position, effect, words[1]) or any(
                chunk.register(register, i + 1) not in (None, value) for register, value in kernel.items()
            ):
                continue
            self.proven[position], found = words[1], True
        return found

    def returned_after(self, position):
        """Whether a handler returned (an rt_sigreturn trampoline ran) after ``position``: only then may an indirect
        jmp or call there have been a signal instead, which ``entered`` tells (a scan: programs without a handler
        that returns need none)."""
        if self._returns is None:  # a trampoline's mov takes 5 or 7 bytes: only such steps are looked at
            addresses = np.asarray(self.values.addresses, dtype=np.uint64)
            steps = np.flatnonzero(np.isin(addresses[1:] - addresses[:-1], (5, 7)))
            found = [address for address in np.unique(addresses[steps]).tolist() if self.trampoline(address)]
            self._returns = steps[np.isin(addresses[steps], np.array(found, dtype=np.uint64))]
        return bool(len(self._returns)) and int(self._returns[-1]) > position

    def entered(self, position):
        """Whether the code the jump after ``position`` enters is a signal handler: the ret that leaves it (calls
        and rets counted) goes to an rt_sigreturn trampoline.  Not where it never returns within _SEARCH
        positions, or another jump or ret to where no call ends comes first (a coroutine switching again): a ret
        to a function that begins a context (swapcontext's) is a ret, and a signal delivered just after a ret in
        a handler that never returns is not told apart."""
        values, depth = self.values, 0
        for later, effect, following in self._run_after(position):
            if effect.kind == "ret":
                if depth == 0:
                    return self.trampoline(following)
                if not values._return_site(following):
                    return False
                depth -= 1
            elif values._cut(later, effect, following, inferred=False):
                return False
            elif effect.kind == "call":
                depth += 1
        return False

    def sigreturn_at(self, position):
        """Whether the ``syscall`` at ``position`` runs rt_sigreturn: its number is 15 (``mov rax, 15`` before it,
        or what the recorder saw)."""
        return self.values.syscall_call(position)[0] == signals.SIGRETURN

    def _unknown_call(self, position):
        """Whether the ``syscall`` at ``position`` may run rt_sigreturn, which loads every register from memory
        (a frame made by hand, as in sigreturn-oriented code): neither the recorder nor the constants before it
        give its number, and the recorder kept no result of it."""
        return self.values.syscall_call(position)[0] is None and position not in self.values.syscalls

    def _candidate(self, position):
        """A jump from a known instruction to a known one."""
        values = self.values
        if position + 1 >= values.count:
            return False
        return bool(values.addresses[position] and values.addresses[position + 1])

    def _paired(self, position):
        """Where the thread resumed after the signal delivered after ``position``, if a later rt_sigreturn says it."""
        values = self.values
        if not self._candidate(position):
            return None
        effect = values._effect(values.addresses[position])
        if effect is None:
            return None
        branch = values._flow[effect.address].transfer in (Transfer.CONDITIONAL, Transfer.INDIRECT)
        if branch and position not in values.interrupted:  # where it went is not known: a successor is no proof
            return None
        # an indirect branch is taken for what it looks like (asking more scans again from each): a signal delivered
        # there has an rt_sigreturn of its own first, which resumes in the handler, not after ``position``
        for later, handler, following in self._run_after(position):
            if handler.kind == "syscall" and self.sigreturn_at(later):
                return following if self._resumes(position, effect, following) else None
            if values._cut(later, handler, following, inferred=False):
                return None
        return None

    def _resumes(self, position, effect, address):
        """Whether the thread interrupted after ``position`` was to go on at ``address``: where the trace says it
        stood (``interrupted``), else at a successor of the instruction."""
        at = self.values.interrupted.get(position)
        if at is not None:
            return address == at
        return not self.values._cut(position, effect, address)

    def _run_after(self, position):
        """``(position, Effect, next address)`` of each instruction after ``position``, up to _SEARCH of them,
        ending at a gap or an instruction not known."""
        values = self.values
        for later in range(position + 1, min(values.count - 1, position + 1 + _SEARCH)):
            current, following = values.addresses[later], values.addresses[later + 1]
            effect = values._effect(current) if current else None
            if effect is None or not following:
                return
            yield later, effect, following

    def _sigreturn(self, syscall):
        found = self._sigreturns.get(syscall.address)
        if found is None:
            found = self._sigreturns[syscall.address] = signals.sigreturn(syscall)
        return found

    def trampoline(self, address):
        """Whether the code at ``address`` is ``mov rax, 15; syscall`` (a handler's return, __restore_rt)."""
        first = self.values._effect(address)
        if not signals.sets_sigreturn(first):
            return False
        second = self.values._effect(first.next_address)
        return second is not None and second.kind == "syscall"


def _word(chunk, state, address):
    data = [chunk.memory_byte(state, address + k) for k in range(_WORD)]
    return None if None in data else int.from_bytes(bytes(data), "little")
