"""Register numbering for the recovery: the TRACKED registers as small integers, and capstone's names mapped onto them.

The recovery keeps one 64-bit value per tracked register.  An instruction
names parts of them (``eax``, ``r9b``, ``ah``); each part is a (register,
shift, width) slice: reading it takes bits, writing a 32-bit part zero-extends
(the whole register is written), writing an 8- or 16-bit part keeps the other
bits (the old value is an input).

Besides them the recovery keeps each vector register (``zmm0``..``zmm31``) as
four 128-bit *lanes*, lane l of register n numbered VECTOR + 32 l + n (lane 0
is ``xmmN``): they carry values through copies (memcpy's ymm and zmm loads
and stores, spills, zeroed structures).  A lane is one unknown like any
register, so a ymm copy is two lane copies and a VEX write of xmm zeroes
lanes 1..3.  Those are internal: the known states and ``registers_at`` have
none.

So is DF, rflags' direction flag on its own: the flags an instruction computes
leave it alone, so it stays one value from a cld or std (or popf, iret, a
signal) to the next, where rflags as a whole is unknown after any instruction
whose flags are not computed.  It decides which way a movs or stos writes.
"""

from .machine_state import TRACKED

INDEX = {name: number for number, name in enumerate(TRACKED)}
RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP = range(8)
RIP, RFLAGS, FS_BASE, GS_BASE = (INDEX[name] for name in ("rip", "rflags", "fs_base", "gs_base"))
COUNT = len(TRACKED)
GPRS = tuple(range(16))  # rax..r15
MASK64 = (1 << 64) - 1
RESUME_FLAG = 0x10000  # RF in rflags: set by the kernel in a fault's saved flags, cleared by each instruction done
# TF in rflags: a single-stepping recorder's (ptrace shows its TF after the program's popf), not the program's (a
# program of its own TF traps at every instruction): the known states' rflags are taken without it
TRAP_FLAG = 0x100
VECTOR = COUNT  # xmm0's number; xmmN (lane 0 of zmmN) is VECTOR + N
LANES = 4  # 128-bit lanes of a 512-bit register
DF = VECTOR + 32 * LANES  # rflags' direction flag, 0 or 1, kept apart (see the module doc)
REGISTERS = DF + 1  # every register the recovery keeps
VECTORS = tuple(range(VECTOR, DF))  # every lane of every vector register

_LEGACY = {"rax": "a", "rbx": "b", "rcx": "c", "rdx": "d"}
_INDEXED = {"rsi": "si", "rdi": "di", "rbp": "bp", "rsp": "sp"}


def _slices():
    """capstone register name -> (register number, shift, width in bits)."""
    table = {}
    for full, letter in _LEGACY.items():
        number = INDEX[full]
        table |= {full: (number, 0, 64), f"e{letter}x": (number, 0, 32), f"{letter}x": (number, 0, 16)}
        table |= {f"{letter}l": (number, 0, 8), f"{letter}h": (number, 8, 8)}
    for full, stem in _INDEXED.items():
        number = INDEX[full]
        table |= {full: (number, 0, 64), f"e{stem}": (number, 0, 32), stem: (number, 0, 16), f"{stem}l": (number, 0, 8)}
    for n in range(8, 16):
        number = INDEX[f"r{n}"]
        table |= {f"r{n}": (number, 0, 64), f"r{n}d": (number, 0, 32), f"r{n}w": (number, 0, 16)}
        table[f"r{n}b"] = (number, 0, 8)
    table |= {"rip": (RIP, 0, 64), "rflags": (RFLAGS, 0, 64), "eflags": (RFLAGS, 0, 64), "flags": (RFLAGS, 0, 64)}
    table |= {f"xmm{n}": (VECTOR + n, 0, 128) for n in range(32)}
    return table


def lanes(number, count=LANES, first=0):
    """Lanes ``first`` .. ``first + count - 1`` of the vector register whose lane 0 is ``number``."""
    return tuple(number + 32 * lane for lane in range(first, first + count))


def all_lanes(registers):
    """``registers`` with every lane of each vector register named by its lane 0: what writing "xmmN" may change
    when nothing says the upper lanes are kept."""
    found = set(registers)
    for number in registers:
        if VECTOR <= number < VECTOR + 32:
            found.update(lanes(number))
    return frozenset(found)


def vector_number(name):
    """The vector register that ``xmmN``, ``ymmN`` or ``zmmN`` is (their low 128 bits are its value), or None."""
    if len(name) > 3 and name[0] in "xyz" and name[1:3] == "mm" and name[3:].isdigit():
        return VECTOR + int(name[3:])
    return None


SLICES = _slices()
# Registers the recovery does not track, but whose reading does not stop a computation (segment selectors: fs and
# gs accesses go through fs_base and gs_base; cs/ds/es/ss are flat in 64-bit mode).
SEGMENTS = frozenset(("cs", "ds", "es", "ss", "fs", "gs"))


def read_slice(full, shift, width):
    return (full >> shift) & ((1 << width) - 1)


def write_slice(old, shift, width, value):
    """The whole register after writing ``value`` to a slice; ``old`` None: unknown (only matters below 32 bits)."""
    value &= (1 << width) - 1
    if width >= 64 or (width == 32 and shift == 0):  # (a vector register's 128 bits: all of what is kept)
        return value
    if old is None:
        return None
    mask = ((1 << width) - 1) << shift
    return (old & ~mask & MASK64) | (value << shift)


def sign_extend(value, width):
    sign = 1 << (width - 1)
    return ((value & ((1 << width) - 1)) ^ sign) - sign
