"""``struct perf_event_mmap_page``: the first page of an event's mapping, shared with the kernel.

It holds the perf clock parameters (``time_mult/shift/zero``, valid when the
``CAP_USER_TIME*`` bits say so), then, at byte 1024, the control words of the
data area (``data_head/tail/offset/size``) and of the AUX area
(``aux_head/tail/offset/size``) after them.
"""

import ctypes
from ctypes import c_uint16, c_uint32, c_uint64

# perf_event_mmap_page.capabilities bits
CAP_USER_RDPMC = 1 << 2
CAP_USER_TIME = 1 << 3
CAP_USER_TIME_ZERO = 1 << 4
CAP_USER_TIME_SHORT = 1 << 5


class perf_event_mmap_page(ctypes.Structure):
    """The header page of a perf mapping (``struct perf_event_mmap_page``, 1088 bytes used)."""

    _fields_ = (
        ("version", c_uint32),
        ("compat_version", c_uint32),
        ("lock", c_uint32),
        ("index", c_uint32),
        ("offset", ctypes.c_int64),
        ("time_enabled", c_uint64),
        ("time_running", c_uint64),
        ("capabilities", c_uint64),  # CAP_USER_* bits
        ("pmc_width", c_uint16),
        ("time_shift", c_uint16),
        ("time_mult", c_uint32),
        ("time_offset", c_uint64),
        ("time_zero", c_uint64),
        ("size", c_uint32),
        ("_reserved_1", c_uint32),
        ("time_cycles", c_uint64),
        ("time_mask", c_uint64),
        ("_reserved", ctypes.c_uint8 * (116 * 8)),
        ("data_head", c_uint64),
        ("data_tail", c_uint64),
        ("data_offset", c_uint64),
        ("data_size", c_uint64),
        ("aux_head", c_uint64),
        ("aux_tail", c_uint64),
        ("aux_offset", c_uint64),
        ("aux_size", c_uint64),
    )
