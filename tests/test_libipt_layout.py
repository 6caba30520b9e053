"""The ctypes structs match intel-pt.h as compiled by the C compiler."""

import ctypes
import shutil
import subprocess

import pytest

from lldb_trace.decode import compiled_loop
from lldb_trace.libipt import structs

HEADER = "/usr/include/intel-pt.h"

PROBE = r"""
#include <stdio.h>
#include <stddef.h>
#include <intel-pt.h>
#define S(t) printf("sizeof %s %zu\n", #t, sizeof(struct t));
#define O(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(struct t, f));
int main(void) {
  S(pt_config) S(pt_packet) S(pt_event) S(pt_insn) S(pt_block) S(pt_asid) S(pt_errata) S(pt_cpu) S(pt_version)
  O(pt_config, cpu) O(pt_config, errata) O(pt_config, cpuid_0x15_eax) O(pt_config, cpuid_0x15_ebx)
  O(pt_config, mtc_freq) O(pt_config, nom_freq) O(pt_config, flags) O(pt_config, addr_filter)
  O(pt_packet, payload) O(pt_event, tsc) O(pt_event, lost_mtc) O(pt_event, lost_cyc) O(pt_event, variant)
  O(pt_event, variant.exec_mode.ip)
  O(pt_block, end_ip) O(pt_block, iclass) O(pt_block, ninsn) O(pt_block, raw) O(pt_block, size)
  O(pt_insn, raw) O(pt_insn, size)
  O(pt_asid, cr3) O(pt_asid, vmcs)
  /* bit-field bytes: set each flag in a zeroed struct and report where it landed */
  { struct pt_block b = {0}; b.truncated = 1; unsigned char *p = (void *)&b;
    for (size_t i = 0; i < sizeof b; i++) if (p[i]) printf("flagbyte pt_block %zu %d\n", i, p[i]); }
  { struct pt_insn n = {0}; n.truncated = 1; unsigned char *p = (void *)&n;
    for (size_t i = 0; i < sizeof n; i++) if (p[i]) printf("flagbyte pt_insn %zu %d\n", i, p[i]); }
  { struct pt_event e = {0}; e.has_tsc = 1; unsigned char *p = (void *)&e;
    for (size_t i = 0; i < sizeof e; i++) if (p[i]) printf("flagbyte pt_event %zu %d\n", i, p[i]); }
  return 0;
}
"""


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is needed to compile the layout probe (scripts/setup.sh test installs it)")
    if not __import__("os").path.exists(HEADER):
        pytest.skip("intel-pt.h missing: apt-get install libipt-dev (scripts/setup.sh test installs it)")
    folder = tmp_path_factory.mktemp("layout")
    (folder / "probe.c").write_text(PROBE)
    subprocess.run(["gcc", "-o", str(folder / "probe"), str(folder / "probe.c")], check=True)
    facts = {}
    for line in subprocess.run([str(folder / "probe")], capture_output=True, text=True, check=True).stdout.split("\n"):
        if line:
            kind, name, *values = line.split()
            facts[(kind, name)] = tuple(int(v) for v in values)
    return facts


@pytest.mark.parametrize("name", sorted(structs.SIZES))
def test_struct_size(layout, name):
    assert ctypes.sizeof(getattr(structs, name)) == layout[("sizeof", name)][0]


@pytest.mark.parametrize(
    "struct_name, field",
    [
        ("pt_config", f)
        for f in ("cpu", "errata", "cpuid_0x15_eax", "cpuid_0x15_ebx", "mtc_freq", "nom_freq", "flags", "addr_filter")
    ]
    + [("pt_packet", "payload"), ("pt_event", "tsc"), ("pt_event", "lost_mtc"), ("pt_event", "lost_cyc")]
    + [("pt_event", "variant"), ("pt_block", "ninsn"), ("pt_block", "raw"), ("pt_block", "size")]
    + [("pt_insn", "raw"), ("pt_insn", "size"), ("pt_asid", "cr3"), ("pt_asid", "vmcs")],
)
def test_field_offset(layout, struct_name, field):
    assert getattr(getattr(structs, struct_name), field).offset == layout[("offsetof", f"{struct_name}.{field}")][0]


def test_flag_bytes(layout):
    # truncated is bit 1 of the flag byte; has_tsc is bit 2 of the event's flag word.
    assert layout[("flagbyte", "pt_block")] == (structs.pt_block.flags.offset, 2)
    assert layout[("flagbyte", "pt_insn")] == (structs.pt_insn.flags.offset, 2)
    assert layout[("flagbyte", "pt_event")] == (structs.pt_event.flags.offset, 4)


def test_the_compiled_decode_loop_reads_pt_block_and_pt_event_where_intel_pt_h_puts_them(layout):
    """block_loop.c declares struct pt_block and struct pt_event itself (it is built without libipt's header)."""
    path = compiled_loop.library_path()
    if path is None:
        pytest.skip("the compiled decode loop was not built (no C compiler at install)")
    facts = (ctypes.c_uint64 * 11)()
    ctypes.CDLL(str(path)).lt_layout(facts)
    offsets = [layout[("offsetof", f"pt_block.{field}")][0] for field in ("end_ip", "iclass", "ninsn")]
    assert list(facts[1:6]) == [layout[("sizeof", "pt_block")][0], *offsets, layout[("flagbyte", "pt_block")][0]]
    event = [layout[("offsetof", f"pt_event.{field}")][0] for field in ("tsc", "variant.exec_mode.ip")]
    assert list(facts[8:11]) == [layout[("sizeof", "pt_event")][0], *event]
    assert layout[("flagbyte", "pt_event")] == (4, 4)  # has_tsc: bit 2 of the flags word, as block_loop.c reads it
