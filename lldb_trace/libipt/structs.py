"""ctypes mirrors of libipt's structs, with C field names.

Where libipt packs ``uint32_t x:1`` bit-fields after narrower members, the
GCC layout puts them in bytes that ctypes bit-fields do not reproduce, so those
bytes are declared as plain integers and decoded by the wrapper modules.  The
sizes are asserted here and cross-checked against ``intel-pt.h`` by the tests.
"""

import ctypes
from ctypes import c_char_p, c_int, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

PT_MAX_INSN_SIZE = 15


class pt_version(ctypes.Structure):
    _fields_ = [
        ("major", c_uint8),
        ("minor", c_uint8),
        ("patch", c_uint16),
        ("build", c_uint32),
        ("ext", c_char_p),
    ]


class pt_cpu(ctypes.Structure):
    _fields_ = [
        ("vendor", c_int),
        ("family", c_uint16),
        ("model", c_uint8),
        ("stepping", c_uint8),
    ]


class pt_errata(ctypes.Structure):
    # 32 bits of named errata flags, then uint32_t reserved[15].
    _fields_ = [("bits", c_uint32), ("reserved", c_uint32 * 15)]


class pt_conf_decode(ctypes.Structure):
    _fields_ = [("callback", c_void_p), ("context", c_void_p)]


class pt_conf_flags(ctypes.Structure):
    # A union of per-decoder bit-fields; word 0 holds the bits we set.
    _fields_ = [("variant", c_uint32 * 4)]


class pt_conf_addr_filter(ctypes.Structure):
    _fields_ = [
        ("addr_cfg", c_uint64),
        ("addr0_a", c_uint64),
        ("addr0_b", c_uint64),
        ("addr1_a", c_uint64),
        ("addr1_b", c_uint64),
        ("addr2_a", c_uint64),
        ("addr2_b", c_uint64),
        ("addr3_a", c_uint64),
        ("addr3_b", c_uint64),
        ("reserved", c_uint64 * 8),
    ]


class pt_config(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t),
        ("begin", c_void_p),
        ("end", c_void_p),
        ("decode", pt_conf_decode),
        ("cpu", pt_cpu),
        ("errata", pt_errata),
        ("cpuid_0x15_eax", c_uint32),
        ("cpuid_0x15_ebx", c_uint32),
        ("mtc_freq", c_uint8),
        ("nom_freq", c_uint8),
        ("flags", pt_conf_flags),
        ("addr_filter", pt_conf_addr_filter),
    ]


class pt_packet(ctypes.Structure):
    # The payload union is 16 bytes at offset 8; packets.py packs it with struct.
    _fields_ = [("type", c_int), ("size", c_uint8), ("_pad", c_uint8 * 3), ("payload", c_uint8 * 16)]


class pt_event(ctypes.Structure):
    # flags byte: ip_suppressed bit 0, status_update bit 1, has_tsc bit 2.
    _fields_ = [
        ("type", c_int),
        ("flags", c_uint32),
        ("tsc", c_uint64),
        ("lost_mtc", c_uint32),
        ("lost_cyc", c_uint32),
        ("reserved", c_uint64 * 2),
        ("variant", c_uint8 * 24),
    ]


class pt_insn(ctypes.Structure):
    # flags byte 36: speculative bit 0, truncated bit 1.
    _fields_ = [
        ("ip", c_uint64),
        ("isid", c_int),
        ("mode", c_int),
        ("iclass", c_int),
        ("raw", c_uint8 * PT_MAX_INSN_SIZE),
        ("size", c_uint8),
        ("flags", c_uint32),
    ]


class pt_block(ctypes.Structure):
    # flags byte 46: speculative bit 0, truncated bit 1.
    _fields_ = [
        ("ip", c_uint64),
        ("end_ip", c_uint64),
        ("isid", c_int),
        ("mode", c_int),
        ("iclass", c_int),
        ("ninsn", c_uint16),
        ("raw", c_uint8 * PT_MAX_INSN_SIZE),
        ("size", c_uint8),
        ("flags", c_uint8),
        ("_pad", c_uint8),
    ]


class pt_asid(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("cr3", c_uint64), ("vmcs", c_uint64)]


PT_ASID_NO_CR3 = 0xFFFFFFFFFFFFFFFF
PT_ASID_NO_VMCS = 0xFFFFFFFFFFFFFFFF

# int read_memory_callback_t(uint8_t *buffer, size_t size,
#                            const struct pt_asid *asid, uint64_t ip, void *ctx)
READ_MEMORY_CALLBACK = ctypes.CFUNCTYPE(
    c_int, ctypes.POINTER(c_uint8), c_size_t, ctypes.POINTER(pt_asid), c_uint64, c_void_p
)

SIZES = {
    "pt_config": 280,
    "pt_packet": 24,
    "pt_event": 64,
    "pt_insn": 40,
    "pt_block": 48,
    "pt_asid": 24,
    "pt_errata": 64,
    "pt_cpu": 8,
    "pt_version": 16,
}

for _name, _size in SIZES.items():
    assert ctypes.sizeof(globals()[_name]) == _size, (_name, ctypes.sizeof(globals()[_name]))
assert pt_packet.payload.offset == 8 and pt_event.variant.offset == 40
assert pt_block.ninsn.offset == 28 and pt_block.raw.offset == 30 and pt_block.flags.offset == 46
assert pt_insn.raw.offset == 20 and pt_insn.flags.offset == 36
assert pt_config.flags.offset == 124 and pt_config.addr_filter.offset == 144
