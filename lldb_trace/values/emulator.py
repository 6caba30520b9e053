"""One instruction run exactly in unicorn, from known inputs, for the instructions the fast paths do not know.

The instruction runs twice, with the registers it is not known to read filled
with two different patterns: an output that differs between the runs depended
on something unknown and is dropped, so a register capstone forgot to list as
read cannot leak a guess.  Memory holds only the bytes of the instruction's
own accesses; a read anywhere else, a fault or a write outside them gives
nothing at all.
"""

from functools import cache

from .classify import FLAGS_DEFINED
from .effects import MemRef
from .registers import COUNT, MASK64, RFLAGS, RIP

PAGE = 4096
_FILLS = (0x5A5A5A5A5A5A5A5A, 0xA5C3A5C3A5C3A5C3)
# rflags unknown: no status flag set, then all of them with DF, NT, AC and ID, which a program may set too (never
# TF): an instruction that writes the status flags alone leaves the others as they were, not known
_FLAG_FILLS = (0x202, 0x244ED7)
# The flags unicorn takes as given: the status flags, IF, DF, NT, AC and ID; the others (TF: a recorder's
# single steps leave it set in what a program pushed and popped) are kept as they were, not run with
_RUN_FLAGS = 0x244ED5
_TRANSLATION_BUFFER = 16 << 20
_MAX_PAGES = 512  # then the emulator starts afresh, so its memory does not grow with the trace


@cache
def _unicorn():
    from unicorn import x86_const

    from lldb_trace.capture.live_software.emulation import _unicorn as project_unicorn

    unicorn, _, _ = project_unicorn()
    names = ("RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "RSP", *(f"R{n}" for n in range(8, 16)), "RIP")
    numbers = [getattr(x86_const, f"UC_X86_REG_{name}") for name in names]
    numbers += [x86_const.UC_X86_REG_EFLAGS, x86_const.UC_X86_REG_FS_BASE, x86_const.UC_X86_REG_GS_BASE]
    return unicorn, numbers


class _OutsideError(Exception):
    """The instruction touched memory outside its described accesses."""


class Emulator:
    """Runs single instructions; one per ThreadValues (it keeps a unicorn instance and its mapped pages)."""

    def __init__(self):
        self._uc = None
        self._pages = set()
        self.runs = 0

    def _engine(self):
        unicorn, _ = _unicorn()
        if self._uc is None or len(self._pages) > _MAX_PAGES:
            self._uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
            # QEMU reserves 1 GiB for translated code by default: single instructions need a sliver, and a
            # debugger holding one emulator per traced thread must not grow by a GiB of address space each
            self._uc.ctl_set_tcg_buffer_size(_TRANSLATION_BUFFER)
            self._pages = set()
        return self._uc

    def _map(self, uc, address, size):
        for page in range(address // PAGE * PAGE, address + size, PAGE):
            if page not in self._pages:
                uc.mem_map(page, PAGE)
                self._pages.add(page)

    def run(self, effect, get, loads):
        """``(registers, stores)`` the instruction computes: ``get(register)`` before it, ``loads``: {access index:
        (address, value)} for each read access, ``stores``: {access index: value}; None when it cannot be run."""
        known = {number: get(number) for number in effect.reads}
        if any(value is None for value in known.values()):
            return None
        if RFLAGS in effect.writes and RFLAGS not in known and get(RFLAGS) is not None:
            known[RFLAGS] = get(RFLAGS)  # the flags it does not write keep their values: an input where known
        addresses = []
        for index, (kind, ref, size) in enumerate(effect.accesses):
            address = ref.address(get) if isinstance(ref, MemRef) else None
            if address is None or (kind == "r" and index not in loads):
                return None
            addresses.append((kind, address, size))
        results = [self._once(effect, known, addresses, loads, fill) for fill in _FILLS]
        if results[0] is None or results[1] is None:
            return None
        (regs_a, stores_a), (regs_b, stores_b) = results
        regs = {n: v for n, v in regs_a.items() if regs_b.get(n) == v and n in effect.writes}
        if effect.mnemonic not in FLAGS_DEFINED:
            regs.pop(RFLAGS, None)  # an undefined flag is whatever this CPU does: unicorn's choice proves nothing
        stores = {i: v for i, v in stores_a.items() if stores_b.get(i) == v}
        return regs, stores

    def _once(self, effect, known, addresses, loads, fill):
        unicorn, numbers = _unicorn()
        uc = self._engine()
        self.runs += 1
        try:
            self._map(uc, effect.address, effect.size)
            uc.mem_write(effect.address, effect.code)
            for _, address, size in addresses:
                self._map(uc, address, size)
            for index, (kind, address, size) in enumerate(addresses):
                if kind == "r":
                    uc.mem_write(address, loads[index].to_bytes(size, "little"))
            for number in range(COUNT):
                if number != RIP:
                    default = fill if number != RFLAGS else _FLAG_FILLS[fill == _FILLS[1]]
                    value = known.get(number, default)
                    uc.reg_write(numbers[number], value & _RUN_FLAGS | 2 if number == RFLAGS else value)
            uc.reg_write(numbers[RIP], effect.address)
            allowed = [(address, address + size) for _, address, size in addresses]
            written = set()  # the bytes it wrote; their values are read back after it (a hook's value is the
            # register's, before a movbe swaps it)

            def check(_uc, access, address, size, value, _data):
                if not any(start <= address and address + size <= end for start, end in allowed):
                    raise _OutsideError
                if access == unicorn.UC_MEM_WRITE:
                    written.update(range(address, address + size))

            hook = uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE, check)
            try:
                uc.emu_start(effect.address, effect.address + effect.size, count=1)
            finally:
                uc.hook_del(hook)
            if uc.reg_read(numbers[RIP]) != effect.address + effect.size:
                return None
        except (unicorn.UcError, _OutsideError):
            return None
        kept = [number for number in effect.writes if number != RIP and number < COUNT]  # (not DF: it is rflags')
        regs = {number: uc.reg_read(numbers[number]) & MASK64 for number in kept}
        if RFLAGS in regs and RFLAGS in known:
            regs[RFLAGS] = regs[RFLAGS] & _RUN_FLAGS | known[RFLAGS] & ~_RUN_FLAGS & MASK64
        provided = {}  # bytes it read: a byte of a write access it did not write keeps that value
        for index, (kind, address, size) in enumerate(addresses):
            if kind == "r":
                provided |= {
                    address + offset: byte for offset, byte in enumerate(loads[index].to_bytes(size, "little"))
                }
        stores = {}
        for index, (kind, address, size) in enumerate(addresses):
            if kind == "w":
                now = uc.mem_read(address, size)
                data = [now[k] if address + k in written else provided.get(address + k) for k in range(size)]
                if None not in data:
                    stores[index] = int.from_bytes(bytes(data), "little")
        return regs, stores
