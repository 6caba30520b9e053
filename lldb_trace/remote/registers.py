"""The x86-64 registers a client sees: GDB's numbering, the target description (target.xml), and their bytes.

GDB's amd64 description needs the 40 registers of ``org.gnu.gdb.i386.core``
(the general registers, the segment selectors and the x87 state) and takes
``org.gnu.gdb.i386.sse``, ``.linux`` (orig_rax) and ``.segments`` (fs_base,
gs_base) when given.  A register the trace and the known states do not tell
is sent as ``x`` digits, which GDB shows as ``<unavailable>`` (LLDB reads them
as 0xcc bytes: the server answers its ``p`` with an error instead).  The x87
and SSE registers are known only where a core file gives them (the end of a
trace with a core).
"""

from __future__ import annotations

from dataclasses import dataclass

GENERAL = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", *(f"r{n}" for n in range(8, 16)))
SELECTORS = ("cs", "ss", "ds", "es", "fs", "gs")
X87_CONTROL = ("fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg", "fooff", "fop")


@dataclass(frozen=True)
class Register:
    """``name`` as GDB calls it; ``size`` in bytes; ``source``: where its value comes from (a name of the
    shown registers, or ``fxsave:OFFSET:WIDTH`` for bytes of a core's FXSAVE area); ``generic``: LLDB's role."""

    number: int
    name: str
    size: int
    type: str
    feature: str
    source: str | None
    group: str | None = None
    generic: str | None = None


def _layout() -> tuple[Register, ...]:
    core, sse = "org.gnu.gdb.i386.core", "org.gnu.gdb.i386.sse"
    roles = {"rip": "pc", "rsp": "sp", "rbp": "fp", "eflags": "flags"}
    registers = [Register(n, name, 8, "int64", core, name, None, roles.get(name)) for n, name in enumerate(GENERAL)]
    registers.append(Register(16, "rip", 8, "code_ptr", core, "rip", None, "pc"))
    registers.append(Register(17, "eflags", 4, "i386_eflags", core, "rflags", None, "flags"))
    registers += [Register(18 + k, name, 4, "int32", core, name) for k, name in enumerate(SELECTORS)]
    registers += [
        Register(24 + k, f"st{k}", 10, "i387_ext", core, f"fxsave:{32 + 16 * k}:10", "float") for k in range(8)
    ]
    x87_sources = {"fctrl": "fxsave:0:2", "fstat": "fxsave:2:2", "fop": "fxsave:6:2"}  # the others need converting
    registers += [
        Register(32 + k, name, 4, "int", core, x87_sources.get(name), "float") for k, name in enumerate(X87_CONTROL)
    ]
    registers += [
        Register(40 + k, f"xmm{k}", 16, "vec128", sse, f"fxsave:{160 + 16 * k}:16", "vector") for k in range(16)
    ]
    registers.append(Register(56, "mxcsr", 4, "i386_mxcsr", sse, "fxsave:24:4", "vector"))
    registers.append(Register(57, "orig_rax", 8, "int", "org.gnu.gdb.i386.linux", "orig_rax", "system"))
    registers.append(Register(58, "fs_base", 8, "int", "org.gnu.gdb.i386.segments", "fs_base", "system"))
    registers.append(Register(59, "gs_base", 8, "int", "org.gnu.gdb.i386.segments", "gs_base", "system"))
    return tuple(registers)


REGISTERS = _layout()

_TYPES = """    <flags id="i386_eflags" size="4">
      <field name="CF" start="0" end="0"/><field name="PF" start="2" end="2"/>
      <field name="AF" start="4" end="4"/><field name="ZF" start="6" end="6"/>
      <field name="SF" start="7" end="7"/><field name="TF" start="8" end="8"/>
      <field name="IF" start="9" end="9"/><field name="DF" start="10" end="10"/>
      <field name="OF" start="11" end="11"/><field name="RF" start="16" end="16"/>
    </flags>
"""
_SSE_TYPES = """    <vector id="v4f" type="ieee_single" count="4"/>
    <vector id="v2d" type="ieee_double" count="2"/>
    <vector id="v16i8" type="int8" count="16"/>
    <vector id="v8i16" type="int16" count="8"/>
    <vector id="v4i32" type="int32" count="4"/>
    <vector id="v2i64" type="int64" count="2"/>
    <union id="vec128">
      <field name="v4_float" type="v4f"/><field name="v2_double" type="v2d"/>
      <field name="v16_int8" type="v16i8"/><field name="v8_int16" type="v8i16"/>
      <field name="v4_int32" type="v4i32"/><field name="v2_int64" type="v2i64"/>
      <field name="uint128" type="uint128"/>
    </union>
    <flags id="i386_mxcsr" size="4">
      <field name="IE" start="0" end="0"/><field name="DE" start="1" end="1"/>
      <field name="ZE" start="2" end="2"/><field name="OE" start="3" end="3"/>
      <field name="UE" start="4" end="4"/><field name="PE" start="5" end="5"/>
      <field name="DAZ" start="6" end="6"/><field name="IM" start="7" end="7"/>
      <field name="DM" start="8" end="8"/><field name="ZM" start="9" end="9"/>
      <field name="OM" start="10" end="10"/><field name="UM" start="11" end="11"/>
      <field name="PM" start="12" end="12"/><field name="FZ" start="15" end="15"/>
    </flags>
"""


def target_xml() -> str:
    """The whole target description, one document (no includes: fewer round trips)."""
    lines = [
        '<?xml version="1.0"?>',
        '<!DOCTYPE target SYSTEM "gdb-target.dtd">',
        '<target version="1.0">',
        "  <architecture>i386:x86-64</architecture>",
        "  <osabi>GNU/Linux</osabi>",
    ]
    for feature in dict.fromkeys(register.feature for register in REGISTERS):
        lines.append(f'  <feature name="{feature}">')
        if feature.endswith(".core"):
            lines.append(_TYPES.rstrip("\n"))
        if feature.endswith(".sse"):
            lines.append(_SSE_TYPES.rstrip("\n"))
        for register in REGISTERS:
            if register.feature == feature:
                attributes = [
                    f'name="{register.name}"',
                    f'bitsize="{register.size * 8}"',
                    f'type="{register.type}"',
                    f'regnum="{register.number}"',
                ]
                if register.group:
                    attributes.append(f'group="{register.group}"')
                if register.generic:
                    attributes.append(f'generic="{register.generic}"')
                lines.append(f"    <reg {' '.join(attributes)}/>")
        lines.append("  </feature>")
    lines.append("</target>")
    return "\n".join(lines) + "\n"


def register_bytes(register: Register, values: dict, fxsave: bytes | None) -> bytes | None:
    """The register's bytes (little-endian) in ``values`` (name -> int) or a core's ``fxsave`` area; None if
    not known."""
    source = register.source
    if source is None:
        return None
    if source.startswith("fxsave:"):
        offset, width = (int(part) for part in source.split(":")[1:])
        if fxsave is None or len(fxsave) < offset + width:
            return None
        return fxsave[offset : offset + width].ljust(register.size, b"\0")
    value = values.get(source)
    if value is None and source == "rflags":
        value = values.get("eflags")
    return None if value is None else (value & ((1 << (8 * register.size)) - 1)).to_bytes(register.size, "little")


def encode(register: Register, values: dict, fxsave: bytes | None) -> bytes:
    """Hex digits of the register for ``g``/``p`` replies: ``x`` digits where it is not known."""
    data = register_bytes(register, values, fxsave)
    return b"xx" * register.size if data is None else data.hex().encode()


def all_registers(values: dict, fxsave: bytes | None) -> bytes:
    return b"".join(encode(register, values, fxsave) for register in REGISTERS)


def by_number(number: int) -> Register | None:
    return REGISTERS[number] if 0 <= number < len(REGISTERS) else None
