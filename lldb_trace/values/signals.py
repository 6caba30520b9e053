"""Signals as the Linux x86-64 kernel delivers them: what a handler's frame holds, and rt_sigreturn's restore.

A trace shows a signal as a jump it cannot explain: from the interrupted
instruction to the handler's first one (the *delivery*), and from the
``syscall`` of ``__restore_rt`` (``mov rax, 15``, rt_sigreturn) back to where
the thread was interrupted.  Both follow the kernel's ABI:

- at the delivery the kernel saves the interrupted registers in a frame it
  writes below the interrupted rsp and its red zone (rt_sigframe: the return
  address, a ucontext whose mcontext holds r8..r15, rdi, rsi, rbp, rbx, rdx,
  rax, rcx, rsp, rip in that order, the siginfo, the vector state), points rsp
  at the frame, sets rdi to the signal number, rsi to the siginfo (frame +
  312), rdx to the ucontext (frame + 8) and rax to 0, starts the handler
  with the vector registers in their initial state, and leaves every other
  general register as it was;
- rt_sigreturn loads every general register from the mcontext at rsp + 40 (the
  handler's ``ret`` popped the return address) and writes no memory; a signal
  still pending may be delivered right after it.

So rt_sigreturn is an instruction like a pop of the registers a delivery leaves, and a delivery
carries the registers it leaves, the memory outside its frame, and the
interrupted registers through the frame's slots.  Which jumps are deliveries:
deliveries.py.
"""

from .effects import Effect, MemRef, Operand
from .registers import DF, FS_BASE, GPRS, GS_BASE, RAX, RDI, RDX, RFLAGS, RIP, RSI, RSP, VECTORS

SIGRETURN = 15
UCONTEXT = 8  # the ucontext's offset in the frame: after the return address
_MCONTEXT = 40  # the mcontext's offset in the ucontext: after uc_flags, uc_link, uc_stack
SIGINFO = UCONTEXT + 304  # after the ucontext
_ORDER = (8, 9, 10, 11, 12, 13, 14, 15, RDI, RSI, 6, 1, RDX, RAX, 2, RSP)  # r8..r15, rdi, rsi, rbp, rbx, rdx...
RIP_SLOT = UCONTEXT + _MCONTEXT + 8 * len(_ORDER)
# What a delivery sets: those registers, and the vector state, which the handler begins from its initial value
# (the frame saves the interrupted one, and rt_sigreturn restores it).  It leaves the other general registers.
CLOBBERED = frozenset((RAX, RDI, RSI, RDX, RSP, RFLAGS, *VECTORS, DF))
KEPT = frozenset(GPRS) - CLOBBERED
RELATIONS = ((RDX, RSP, UCONTEXT), (RSI, RSP, SIGINFO))  # rdx = rsp + 8, rsi = rsp + 312 at the handler's entry
RED_ZONE = 128  # bytes below rsp that a frame leaves alone
MOST_FRAME = 1 << 16  # the most a frame takes (AMX state included); a frame on another stack: this much from rsp
_WIDE = 64


def slot(register):
    """Where the frame keeps the interrupted value of ``register`` (a general one or rip), from the frame's address
    (the handler's rsp)."""
    return RIP_SLOT if register == RIP else UCONTEXT + _MCONTEXT + 8 * _ORDER.index(register)


def frame_extent(frame, interrupted_rsp):
    """``(low, high)``: the bytes the kernel may have written for a frame at ``frame``: up to the interrupted rsp's
    red zone where that is above it and near, else (another stack, or the rsp unknown) MOST_FRAME bytes."""
    if interrupted_rsp is not None and 0 < interrupted_rsp - RED_ZONE - frame <= MOST_FRAME:
        return frame, interrupted_rsp - RED_ZONE
    return frame, frame + MOST_FRAME


def sets_sigreturn(effect):
    """``mov rax, 15`` (or eax): the instruction before ``__restore_rt``'s syscall."""
    if effect is None or effect.kind != "mov" or len(effect.operands) != 2:
        return False
    target, source = effect.operands
    return (
        target.kind == "reg"
        and target.reg[0] == RAX
        and target.reg[2] in (32, 64)
        and source.kind == "imm"
        and (source.imm == SIGRETURN)
    )


def unknown_call(syscall):
    """The Effect of a ``syscall`` whose number is not known: it may be rt_sigreturn, so every register is unknown
    after it (none is taken from its frame, which may be one a program made), and it may write any memory."""
    effect = Effect(syscall.address, syscall.size, syscall.mnemonic, "opaque", (), syscall.reads)
    effect.writes = frozenset((*GPRS, RFLAGS, FS_BASE, GS_BASE, *VECTORS, DF))
    effect.accesses, effect.code, effect.barrier = (), syscall.code, True
    effect.mentioned, effect.seed = tuple(sorted(effect.reads | effect.writes)), True
    return effect


def sigreturn(syscall):
    """The Effect of a ``syscall`` that runs rt_sigreturn: every general register loaded from the mcontext.  Only
    those a delivery leaves are known to be what the next instruction sees: a signal still pending (the one the
    restored mask unblocks) is delivered at once, and then the next instruction is a handler's."""
    kept = [(k, register) for k, register in enumerate(_ORDER) if register in KEPT]
    loads = tuple(("r", MemRef(RSP, None, 1, _MCONTEXT + 8 * k, None), 8) for k, _ in kept)
    operands = tuple(Operand("reg", reg=(register, 0, _WIDE), load=n) for n, (_, register) in enumerate(kept))
    effect = Effect(syscall.address, syscall.size, "sigreturn", "sigreturn", operands, frozenset((RSP,)))
    effect.writes, effect.accesses, effect.code = frozenset((*GPRS, RFLAGS, *VECTORS, DF)), loads, syscall.code
    effect.mentioned, effect.seed = tuple(sorted(effect.reads | effect.writes)), True
    return effect
