"""An instruction's data semantics as the recovery keeps them: its operands, memory references and Effect.

semantics.decode makes them (capstone), classify.py decides their kind;
rules.py and emulator.py compute with them.
"""

from dataclasses import dataclass

from .registers import DF, MASK64, RAX, RCX, RDX, RFLAGS

# The xsave family's state components 2..7 (AVX, MPX, AVX-512) by size, and where each ends in the standard
# layout (Intel's offsets: AMD's, without MPX, end earlier).  The legacy region and the header take 576 bytes;
# the compacted layout (xsavec, xsaves) packs the components asked for after them, each a multiple of 64 bytes
# long, so none needs padding.  Components 8 and up (PT, PKRU, AMX...) are not bounded here: a barrier.
_COMPONENT_SIZES = {2: 256, 3: 64, 4: 64, 5: 64, 6: 512, 7: 1024}
_STANDARD_ENDS = {2: 832, 3: 1024, 4: 1088, 5: 1152, 6: 1664, 7: 2688}
_LEGACY_AND_HEADER, _SMALL_COMPONENTS = 576, 0xFF
STATE_AREA_BOUND = _STANDARD_ENDS[7]


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
class Address32(MemRef):
    """An address computed in 32 bits (an address-size prefix, ``[ebx + ecx*4]``): the sum wraps at 4 GiB, then the
    segment's base is added.  Of its own class, so no stack slot is named by it (slots.py)."""

    def address(self, get):
        total = self.disp
        for register, factor in ((self.base, 1), (self.index, self.scale)):
            if register is not None:
                value = get(register)
                if value is None:
                    return None
                total += (value & 0xFFFFFFFF) * factor
        total &= 0xFFFFFFFF
        if self.segment is not None:
            segment = get(self.segment)
            total = None if segment is None else (total + segment) & MASK64
        return total


@dataclass(frozen=True, slots=True)
class StateArea(MemRef):
    """The area an xsave writes: known only where edx:eax (the components asked for) shows how far it reaches
    (``extent``); elsewhere the write is a barrier (AMX tiles alone take 8 KiB)."""

    compacted: bool = False

    def extent(self, get, enabled=None):
        """The bytes the instruction may write from its address, or None where the components asked for are
        unknown or not bounded; ``enabled``: XCR0 where known (a component the OS did not enable is not saved)."""
        rax, rdx = get(RAX), get(RDX)
        if rax is None or rdx is None:
            return None
        asked = (rdx & 0xFFFFFFFF) << 32 | rax & 0xFFFFFFFF
        if enabled is not None:
            asked &= enabled
        if asked & ~_SMALL_COMPONENTS:
            return None
        components = [c for c in _COMPONENT_SIZES if asked >> c & 1]
        if self.compacted:
            return _LEGACY_AND_HEADER + sum(_COMPONENT_SIZES[c] for c in components)
        return max([_LEGACY_AND_HEADER] + [_STANDARD_ENDS[c] for c in components])


@dataclass(frozen=True, slots=True)
class BitString(MemRef):
    """The word a ``bt``/``bts``/``btr``/``btc`` of memory by a register's bit offset touches: the offset is signed
    and counts from the operand's address, so the word is ``offset // bits`` words away (far, maybe).  Known where
    the offset register is; elsewhere the write is a barrier."""

    offset: tuple = (0, 0, 64)  # the bit offset's register slice (register, shift, width)
    size: int = 8  # the operand's bytes

    def address(self, get):
        start, offset = MemRef.address(self, get), get(self.offset[0])
        if start is None or offset is None:
            return None
        width = self.offset[2]
        offset = offset >> self.offset[1] & (1 << width) - 1
        signed = offset - (1 << width) if offset >> (width - 1) else offset
        return (start + signed // (8 * self.size) * self.size) & MASK64


STRING_AREA_BOUND = 4096  # the most bytes a movs or stos is sized to: a larger one stays a barrier


@dataclass(frozen=True, slots=True)
class StringArea(MemRef):
    """The bytes a movs or stos writes (a movs reads) from rdi (rsi) on: rcx elements with a rep prefix, one
    without; upwards, downwards where the direction flag is set, and both ways where it is unknown.  Known
    where those registers are and the area is at most STRING_AREA_BOUND bytes (``extent``); elsewhere the write
    is a barrier."""

    element: int = 1
    repeated: bool = False

    def address(self, get):
        span = self._span(get)
        return None if span is None else span[0]

    def extent(self, get, _enabled=None):
        span = self._span(get)
        return None if span is None else span[1]

    def direction(self, get):
        """0 upwards, 1 downwards, None unknown (a recorder's states give rflags, not DF)."""
        direction, flags = get(DF), get(RFLAGS)
        return flags >> 10 & 1 if direction is None and flags is not None else direction

    def _span(self, get):
        start, count = get(self.base), get(RCX) if self.repeated else 1
        if start is None or count is None or not 0 < count * self.element <= STRING_AREA_BOUND:
            return None
        length, direction = count * self.element, self.direction(get)
        if direction == 0:
            return start, length
        low = (start - length + self.element) & MASK64
        return (low, length) if direction is not None else (low, 2 * length - self.element)


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
    partial: bool = False  # its memory write may leave some bytes of its area alone (a mask, a compress)
    code: bytes = b""
    signed: bool = False  # movsx
    extra: int = 0  # ret's immediate
    zeroed: tuple = ()  # kind "lanes": the vector lanes it sets to 0 (vector.py)

    @property
    def next_address(self):
        return self.address + self.size
