"""An instruction's data semantics as the recovery keeps them: its operands, memory references and Effect.

semantics.decode makes them (capstone), classify.py decides their kind;
rules.py and emulator.py compute with them.
"""

from dataclasses import dataclass

from .registers import MASK64, RAX, RDX

# The xsave family's state components 0..7 (x87, SSE, AVX, MPX, AVX-512) end at byte 2688 of the standard layout
# and at most 2938 of the compacted one (with every component 64-byte aligned): 4096 bounds the area they write.
_SMALL_COMPONENTS, STATE_AREA_BOUND = 0xFF, 4096


@dataclass(frozen=True, slots=True)
class MemRef:
    """An address: base + index * scale + disp (+ fs_base/gs_base); rip-relative ones are folded into ``disp``."""

    base: int | None
    index: int | None
    scale: int
    disp: int
    segment: int | None  # FS_BASE, GS_BASE or None

    def address(self, get):
        total = self.disp
        for register, factor in ((self.base, 1), (self.index, self.scale), (self.segment, 1)):
            if register is not None:
                value = get(register)
                if value is None:
                    return None
                total += value * factor
        return total & MASK64


@dataclass(frozen=True, slots=True)
class StateArea(MemRef):
    """The area an xsave writes: its address counts as known only where edx:eax (the components asked for) shows
    that STATE_AREA_BOUND bytes hold it; elsewhere the write is a barrier (AMX tiles alone take 8 KiB)."""

    def address(self, get):
        rax, rdx = get(RAX), get(RDX)
        if rax is None or rdx is None or ((rdx & 0xFFFFFFFF) << 32 | rax & 0xFFFFFFFF) & ~_SMALL_COMPONENTS:
            return None
        return MemRef.address(self, get)


@dataclass(frozen=True, slots=True)
class Operand:
    kind: str  # "reg", "imm", "mem", "untracked"
    reg: tuple | None = None  # (register, shift, width) of a "reg"
    imm: int = 0
    load: int = -1  # a "mem": the index of its read in Effect.accesses (-1: not read)
    store: int = -1  # and of its write
    width: int = 64  # bits
    ref: MemRef | None = None


@dataclass(slots=True)
class Effect:
    """One instruction's data semantics (see the module doc)."""

    address: int
    size: int
    mnemonic: str
    kind: str  # "nop", "mov", "movx", "lea", "alu", "unary", "push", "pop", "call", "ret", "leave", "xchg", "jmp",
    #            "lanes" (vector copies, vector.py), "syscall", "generic" (unicorn), "opaque"
    operands: tuple = ()
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    accesses: tuple = ()  # (kind "r"|"w", MemRef, size in bytes)
    barrier: bool = False
    # Derived once classified (semantics.decode), for the window's loops:
    mentioned: tuple = ()  # the registers it reads or writes
    related: tuple = ()  # rules.relations(self), set where it is decoded for a window (recovery.py)
    seed: bool = False  # a rule may learn something from it before any register is known
    code: bytes = b""
    signed: bool = False  # movsx
    extra: int = 0  # ret's immediate
    zeroed: tuple = ()  # kind "lanes": the vector lanes it sets to 0 (vector.py)

    @property
    def next_address(self):
        return self.address + self.size
