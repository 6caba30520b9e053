"""What the kernel does between two instructions of a window (chunk.py): an unrecorded system call, whose
number and arguments bound what it writes (x86/syscall_memory.py), and a signal delivered after an
instruction (signals.py), whose frame saves the interrupted registers."""

from ..x86 import syscall_memory
from . import rules, signals
from .registers import DF, GPRS, RAX, RCX, RDI, RDX, RIP, RSI, RSP

EXACT = frozenset(
    ("mov", "movx", "lea", "alu", "unary", "push", "pop", "call", "ret", "leave", "xchg", "jmp", "lanes", "sigreturn")
)
_SYSCALL_ARGUMENTS = (RDI, RSI, RDX, 10, 8, 9)  # r10, r8, r9: the fourth to sixth
_MOST_BOUNDED = 1 << 20  # bytes a system call may write before it counts as writing anything


class KernelSteps:
    """The kernel's part of a Chunk's solving: the methods use its values, memory and worklist."""

    def _deliver(self, i, effect, resume):
        """Instruction i, then the kernel delivering a signal (signals.py): the interrupted state P is what the
        instruction left; the handler's state keeps P's registers but those the kernel sets, and the frame saves
        them all, so a slot learned later tells P, and through the instruction's rules what came before."""

        def before(register):
            return effect.address if register == RIP else self.register(register, i)

        self._find_addresses(i, effect, before)
        regs, stores = {}, {}
        if effect.kind == "syscall":
            regs = {RCX: effect.next_address}
            if i not in self.bounded:
                self._bound_syscall(i, before)
        elif effect.kind in EXACT:
            regs, stores = rules.forward(effect, before, lambda access: self.loaded.get((i, access)))
        for access, value in stores.items():
            self._fact(i, access, value)
        interrupted = {RIP: resume}
        for register in GPRS:
            found = [regs.get(register) if register in effect.writes else before(register)]
            found.append(self.stored.get((i, ("frame", register))))
            if register in signals.KEPT:
                found.append(self.register(register, i + 1))
            value = interrupted[register] = next((v for v in found if v is not None), None)
            if value is None:
                continue
            if register not in effect.writes:
                self._learn(register, i, value)
            if register in signals.KEPT:
                self._learn(register, i + 1, value)
        self._learn(RAX, i + 1, 0)
        self._learn(DF, i + 1, 0)  # the kernel clears the direction flag for the handler
        for register, value in interrupted.items():
            if value is not None and self.saved.get((i, register)) != value:
                self.saved[(i, register)] = value
                if self.memory is not None and self.frames.get(i) is not None:
                    self.memory.fact(self._slot(i, register), value)
        if self.memory is not None and self.frames.get(i) != self._frame_extent(i):
            self.relayout = self.rebuild = True  # the frame's address, or how far it reaches, is known now
        if effect.kind in EXACT:  # what the instruction's outputs, the interrupted registers, say of its inputs
            memory = (lambda access: self.loaded.get((i, access)), lambda access: self.stored.get((i, access)))
            regs, loads = rules.backward(
                effect, before, interrupted.get, memory, resume, lambda r: self.structure.wide(r, i)
            )
            for register, value in regs.items():
                self._learn(register, i, value)
            for access, value in loads.items():
                self._fact(i, access, value)

    def _frame_extent(self, i):
        """The bytes the signal frame of the delivery after instruction i took (signals.frame_extent), or None."""
        frame = self.register(RSP, i + 1)
        return None if frame is None else signals.frame_extent(frame, self.saved.get((i, RSP)))

    def _slot(self, i, register):
        """The frame's slot of ``register`` as a write of the delivery after instruction i."""
        return (i, ("frame", register), "w", self.register(RSP, i + 1) + signals.slot(register), 8)

    def _bound_syscall(self, i, before):
        """Where the system call at i, not recorded, may write, from its number and arguments: its buffers stop
        being what they were (their values unknown until a later fact says them), and the rest of memory stays."""
        number = before(RAX)
        if number is None:
            return
        arguments = [before(register) for register in _SYSCALL_ARGUMENTS]
        ranges = syscall_memory.written(number, arguments)
        if ranges is not None and sum(size for _, size in ranges) <= _MOST_BOUNDED:
            self.bounded[i] = ranges
            self.relayout = self.rebuild = True
