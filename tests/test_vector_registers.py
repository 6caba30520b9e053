"""The AVX and AVX-512 registers at the end of a trace with a core: a vector variable of 32 or 64 bytes held in a
register is read from ymm or zmm, which the core's XSAVE area completes.  The target had the FXSAVE area's
16-byte xmm registers alone, and LLDB read a ``__m256`` from xmm0 with its upper half shown as zeros, as known
(test_traces/src/vector_crash.c)."""

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SOURCES

from lldb_trace.debugger.register_layout import register_info, register_values
from lldb_trace.values.core_file import open_core

AVX2 = " avx2 " in Path("/proc/cpuinfo").read_text()


def _xstate(xcr0, present, parts):
    """An XSAVE area (standard format) with XCR0 and XSTATE_BV, and ``parts`` {offset: bytes} written in."""
    area = bytearray(2688)
    area[464:472], area[512:520] = xcr0.to_bytes(8, "little"), present.to_bytes(8, "little")
    for offset, data in parts.items():
        area[offset : offset + len(data)] = data
    return bytes(area)


def test_the_xsave_area_completes_ymm_zmm_and_the_opmasks():
    fpregs = bytearray(512)
    fpregs[160:176] = bytes(range(16))  # xmm0
    upper, zmm_upper, zmm17 = bytes(range(16, 32)), bytes(range(32, 64)), bytes(range(100, 164))
    xstate = _xstate(0xE7, 0xE7, {576: upper, 1152: zmm_upper, 1664 + 64: zmm17, 1088 + 8: b"\x11\x80"})
    shown = register_values({"rip": 1}, bytes(fpregs), xstate)
    assert shown["ymm0"].to_bytes(32, "little") == bytes(range(32))
    assert shown["zmm0"].to_bytes(64, "little") == bytes(range(64))
    assert shown["zmm17"].to_bytes(64, "little") == zmm17 and shown["xmm17"] == int.from_bytes(zmm17[:16], "little")
    assert shown["k1"] == 0x8011 and shown["zmm1"] == 0
    dwarf = {info["name"]: info.get("dwarf") for info in register_info(shown)["registers"]}
    assert (dwarf["zmm0"], dwarf["zmm17"], dwarf["k1"]) == (17, 68, 119)  # the widest one holds the number
    assert dwarf["xmm0"] is None and dwarf["ymm0"] is None
    # AVX enabled but in its initial state (XSTATE_BV clear): the upper halves are zeros, known
    shown = register_values({"rip": 1}, bytes(fpregs), _xstate(0x7, 0x3, {576: upper}))
    assert shown["ymm0"] == shown["xmm0"] and "zmm0" not in shown
    assert register_values({"rip": 1}, bytes(fpregs), _xstate(0x3, 0x3, {})).keys() >= {"xmm0"}
    assert "ymm0" not in register_values({"rip": 1}, bytes(fpregs), _xstate(0x3, 0x3, {}))


@pytest.mark.skipif(not AVX2, reason="no AVX2 on this CPU")
def test_a_vector_variable_in_a_register_at_the_crash_is_the_cores_whole_value(session, tmp_path):
    binary = tmp_path / "vector_crash"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(binary), str(SOURCES / "vector_crash.c")], check=True)
    command = [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(tmp_path / "rec"), "--"]
    subprocess.run([*command, str(binary)], capture_output=True, timeout=300)
    assert open_core(tmp_path / "rec" / "cores" / "end.core").threads[0].xstate is not None
    session.ok(f"trace load {tmp_path / 'rec'}")
    shown = session.ok("frame variable v w")
    assert "(__m256) v = (5.5, 7, 8.5, 10, 11.5, 13, 14.5, 16)" in shown, shown  # data[3..10] = 1 + 1.5 i
    assert "(__m256) w = (30.25, 49, 72.25, 100, 132.25, 169, 210.25, 256)" in shown
    session.ok("pt goto 5")
    session.handle("register read ymm0")
    assert "error: ymm0 is not known at this position" in session.streams()[1]  # said "Invalid register name"
