"""The registers a traced thread shows at its position, as LLDB's dynamic register info and context bytes.

LLDB asks a scripted thread for its register info each time it makes the
thread again, which it does at every stop: so each stop describes only the
registers whose values are known there.  A register the trace and the known
states do not determine is absent: ``register read`` does not list it, an
expression naming it fails, and LLDB never shows a made-up value for it.
At the end of a trace with a core file, every register of the core is known.
"""

# name -> (DWARF number, generic name or None); x86-64 System V numbering
_GENERAL = {
    "rax": (0, None), "rbx": (3, None), "rcx": (2, "arg4"), "rdx": (1, "arg3"), "rsi": (4, "arg2"),
    "rdi": (5, "arg1"), "rbp": (6, "fp"), "rsp": (7, "sp"), "r8": (8, "arg5"), "r9": (9, "arg6"),
    "r10": (10, None), "r11": (11, None), "r12": (12, None), "r13": (13, None), "r14": (14, None),
    "r15": (15, None), "rip": (16, "pc"), "rflags": (49, "flags"), "cs": (51, None), "ss": (52, None),
    "ds": (53, None), "es": (50, None), "fs": (54, None), "gs": (55, None), "fs_base": (58, None),
    "gs_base": (59, None),
}  # fmt: skip
GENERAL_SET = tuple(_GENERAL)  # the set LLDB's 'register read' shows by default
_VECTOR = {f"xmm{i}": 17 + i for i in range(16)}
# The FXSAVE area's x87 control registers shown from a core: name -> (offset, bytes, DWARF number or None)
_X87 = {"fctrl": (0, 2, 65), "fstat": (2, 2, 66), "ftag": (4, 1, None), "fop": (6, 2, None),
        "mxcsr": (24, 4, 64), "mxcsrmask": (28, 4, None)}  # fmt: skip
_STACK = {f"st{i}": 33 + i for i in range(8)}  # 80-bit x87 registers, 16 bytes apart from offset 32
# Parts of the general registers LLDB names (eax, ax, al, ah...), shown wherever the whole one is known.
_PARTS = {
    **{f"e{r[1:]}": (r, 31, 0) for r in ("rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp")},
    **{f"r{i}d": (f"r{i}", 31, 0) for i in range(8, 16)},
    **{r[1:]: (r, 15, 0) for r in ("rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp")},
    **{f"r{i}w": (f"r{i}", 15, 0) for i in range(8, 16)},
    **{f"{r[1]}h": (r, 15, 8) for r in ("rax", "rbx", "rcx", "rdx")},
    **{f"{r[1]}l": (r, 7, 0) for r in ("rax", "rbx", "rcx", "rdx")},
    **{f"{r[1:]}l": (r, 7, 0) for r in ("rdi", "rsi", "rbp", "rsp")},
    **{f"r{i}l": (f"r{i}", 7, 0) for i in range(8, 16)},
}
FLOATING_SET = (*_X87, *_STACK, *_VECTOR)  # what 'register read --all' adds, where a core gives them
_SETS = ["General Purpose Registers", "Floating Point Registers", "Parts of General Purpose Registers"]
_ALT_NAMES = {"rip": "pc", "rsp": "sp", "rbp": "fp"}
# LLDB's generic names of the registers a command may name instead (``register read pc``)
GENERIC_NAMES = {**{alias: name for name, alias in _ALT_NAMES.items()}, "flags": "rflags"}
FXSAVE_STACK = 32
FXSAVE_XMM = 160
FXSAVE_SIZE = 512
# The XSAVE area of a core's NT_X86_XSTATE, in the standard format: XCR0 (the components the process has, in the
# bytes Linux keeps for software), XSTATE_BV (those not in their initial state, all zeros), and where the AVX and
# AVX-512 components lie: AVX (the ymm upper halves), opmask (k0-k7), ZMM_Hi256 (zmm0-15's upper halves), Hi16_ZMM
_XCR0_AT, _XSTATE_BV_AT = 464, 512
_AVX, _OPMASK, _ZMM_HI256, _HI16_ZMM = 2, 5, 6, 7
_COMPONENTS = {_AVX: (576, 256), _OPMASK: (1088, 64), _ZMM_HI256: (1152, 512), _HI16_ZMM: (1664, 1024)}
_WIDTHS = {"xmm": 16, "ymm": 32, "zmm": 64}
_UPPER_XMM = 67  # xmm16's DWARF number
_OPMASKS = {f"k{i}": 118 + i for i in range(8)}


def register_values(registers, fpregs=None, xstate=None):
    """``{name: int}`` of the registers shown: the known general ones (None values dropped), the FXSAVE area's x87
    and SSE registers when one is given (a core's), and the AVX and AVX-512 ones its XSAVE area (``xstate``) holds."""
    shown = {name: registers[name] for name in _GENERAL if registers.get(name) is not None}
    if fpregs is not None and len(fpregs) >= FXSAVE_SIZE:
        for name, (offset, size, _) in _X87.items():
            shown[name] = int.from_bytes(fpregs[offset : offset + size], "little")
        for name, dwarf in _STACK.items():
            at = FXSAVE_STACK + 16 * (dwarf - 33)
            shown[name] = int.from_bytes(fpregs[at : at + 10], "little")
        for name, dwarf in _VECTOR.items():
            at = FXSAVE_XMM + 16 * (dwarf - 17)
            shown[name] = int.from_bytes(fpregs[at : at + 16], "little")
        shown.update(_wide_vectors([shown[f"xmm{i}"] for i in range(16)], xstate))
    return shown


def _wide_vectors(xmm, xstate):
    """ymm0-15 where the process has AVX, and xmm16-31, ymm16-31, zmm0-31 and k0-7 where it has AVX-512, from the
    XSAVE area: without them a 32- or 64-byte vector variable in a register was read from its 16-byte xmm, the
    rest shown as zeros."""
    if xstate is None or len(xstate) < _XSTATE_BV_AT + 8:
        return {}
    enabled, present = (int.from_bytes(xstate[at : at + 8], "little") for at in (_XCR0_AT, _XSTATE_BV_AT))

    def held(component):
        offset, size = _COMPONENTS[component]
        return enabled >> component & 1 and len(xstate) >= offset + size

    def part(component, index, size):  # a component not present is in its initial state: zeros
        at = _COMPONENTS[component][0] + index * size
        return int.from_bytes(xstate[at : at + size], "little") if present >> component & 1 else 0

    if not held(_AVX):
        return {}
    ymm = [xmm[i] | part(_AVX, i, 16) << 128 for i in range(16)]
    shown = {f"ymm{i}": value for i, value in enumerate(ymm)}
    if not all(held(component) for component in (_OPMASK, _ZMM_HI256, _HI16_ZMM)):
        return shown
    zmm = [ymm[i] | part(_ZMM_HI256, i, 32) << 256 for i in range(16)]
    zmm += [part(_HI16_ZMM, i, 64) for i in range(16)]
    for width in ("xmm", "ymm"):
        shown.update({f"{width}{i}": zmm[i] & ((1 << 8 * _WIDTHS[width]) - 1) for i in range(16, 32)})
    shown.update({f"zmm{i}": value for i, value in enumerate(zmm)})
    shown.update({name: part(_OPMASK, i, 8) for i, name in enumerate(_OPMASKS)})
    return shown


def _vector_width(name):
    """16, 32 or 64 for a vector register's name (xmm0, ymm17, zmm3), else None."""
    width = _WIDTHS.get(name[:3])
    return width if width is not None and name[3:].isdigit() else None


def _vector_dwarf(name, values):
    """A vector register's DWARF number, where it is the widest of its number that ``values`` hold: a variable in
    xmm0 (DWARF 17) of 32 or 64 bytes is read from that one, its low bytes being xmm0's."""
    number = int(name[3:])
    widest = next(width for width in ("zmm", "ymm", "xmm") if f"{width}{number}" in values)
    if name[:3] != widest:
        return None
    return 17 + number if number < 16 else _UPPER_XMM + number - 16


def _size(name):
    if name in _X87:
        return _X87[name][1]
    return 10 if name in _STACK else _vector_width(name) or 8


def register_info(values, unwinds=True):
    """LLDB's register info for the registers of ``values`` (register_values' dict), in its order, then the
    parts of the known general registers (eax, ax, al...), read from their bytes (little-endian)."""
    registers, offset, offsets = [], 0, {}
    for name in values:
        offsets[name] = offset
        info = {"name": name, "offset": offset, "bitsize": 8 * _size(name), "encoding": "uint", "format": "hex"}
        if name in _GENERAL:
            dwarf, generic = _GENERAL[name]
            info["set"] = 0
            if unwinds or generic == "pc":
                info.update(dwarf=dwarf, gcc=dwarf)
            if generic and (unwinds or generic not in ("sp", "fp")):
                info["generic"] = generic
            if name in _ALT_NAMES:
                info["alt-name"] = _ALT_NAMES[name]
        else:
            vector = _vector_width(name) is not None
            dwarf = _X87[name][2] if name in _X87 else _STACK.get(name, _OPMASKS.get(name))
            dwarf = _vector_dwarf(name, values) if vector else dwarf
            info["set"] = 1
            if dwarf is not None:
                info.update(dwarf=dwarf, gcc=dwarf)
            if name in _STACK:
                info.update(encoding="vector", format="bytes")
            elif vector:
                info.update(encoding="vector", format="uint8_t[]")
        registers.append(info)
        offset += _size(name)
    for part, (whole, high, low) in _PARTS.items():
        if whole in values:
            registers.append({"name": part, "bitsize": high - low + 1, "offset": offsets[whole] + low // 8,
                              "encoding": "uint", "format": "hex", "set": 2})  # fmt: skip
    return {"sets": _SETS, "registers": registers}


def register_bytes(values):
    """The register context LLDB reads, laid out as register_info(values) says (the parts take no bytes)."""
    out = bytearray()
    for name, value in values.items():
        size = _size(name)
        out += (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return bytes(out)


_WIDE = (*(f"{width}{i}" for width in _WIDTHS for i in range(32)), *_OPMASKS)  # with AVX and AVX-512
X86_REGISTER_NAMES = frozenset((*_GENERAL, *_VECTOR, *_X87, *_STACK, *_PARTS, *_ALT_NAMES.values(), *_WIDE))
