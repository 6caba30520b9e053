"""``struct perf_event_attr``: what an event counts or records, as perf_event_open(2) reads it.

:class:`perf_event_attr` is the kernel's struct as of ``PERF_ATTR_SIZE_VER8``
(136 bytes, ``config3`` last).  ``size`` is set to that on construction.
Older kernels accept it, because the kernel only refuses a larger struct when
the bytes it does not know are non-zero (E2BIG).  The flag bit-fields and the
unions keep their C names (``attr.disabled = 1``, ``attr.config1``).  A
perf.data file stores the same struct for each of its events, so the reader
will share it.
"""

import ctypes
from ctypes import c_int32, c_uint16, c_uint32, c_uint64

# enum perf_type_id; dynamic PMUs (intel_pt) have their type in sysfs.
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_TRACEPOINT = 2
PERF_TYPE_HW_CACHE = 3
PERF_TYPE_RAW = 4
PERF_TYPE_BREAKPOINT = 5
PERF_COUNT_SW_DUMMY = 9

PERF_ATTR_SIZE_VER0 = 64
PERF_ATTR_SIZE_VER5 = 112  # aux_watermark: the first size with AUX support
PERF_ATTR_SIZE_VER7 = 128
PERF_ATTR_SIZE_VER8 = 136

# perf_event_open's flags argument
PERF_FLAG_FD_NO_GROUP = 1 << 0
PERF_FLAG_FD_OUTPUT = 1 << 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3

# aux_action bits (offset 116; before Linux 6.13 this word was __reserved_3 and must stay 0)
AUX_START_PAUSED = 1 << 0
AUX_PAUSE = 1 << 1
AUX_RESUME = 1 << 2


class _SamplePeriod(ctypes.Union):
    _fields_ = (("sample_period", c_uint64), ("sample_freq", c_uint64))


class _Wakeup(ctypes.Union):
    _fields_ = (("wakeup_events", c_uint32), ("wakeup_watermark", c_uint32))


class _Config1(ctypes.Union):
    _fields_ = (("bp_addr", c_uint64), ("kprobe_func", c_uint64), ("uprobe_path", c_uint64), ("config1", c_uint64))


class _Config2(ctypes.Union):
    _fields_ = (("bp_len", c_uint64), ("kprobe_addr", c_uint64), ("probe_offset", c_uint64), ("config2", c_uint64))


# The flag word at offset 40, lowest bit first (checked bit by bit against the C compiler).
ATTR_FLAGS = (
    ("disabled", 1),
    ("inherit", 1),
    ("pinned", 1),
    ("exclusive", 1),
    ("exclude_user", 1),
    ("exclude_kernel", 1),
    ("exclude_hv", 1),
    ("exclude_idle", 1),
    ("mmap", 1),
    ("comm", 1),
    ("freq", 1),
    ("inherit_stat", 1),
    ("enable_on_exec", 1),
    ("task", 1),
    ("watermark", 1),
    ("precise_ip", 2),
    ("mmap_data", 1),
    ("sample_id_all", 1),
    ("exclude_host", 1),
    ("exclude_guest", 1),
    ("exclude_callchain_kernel", 1),
    ("exclude_callchain_user", 1),
    ("mmap2", 1),
    ("comm_exec", 1),
    ("use_clockid", 1),
    ("context_switch", 1),
    ("write_backward", 1),
    ("namespaces", 1),
    ("ksymbol", 1),
    ("bpf_event", 1),
    ("aux_output", 1),
    ("cgroup", 1),
    ("text_poke", 1),
    ("build_id", 1),
    ("inherit_thread", 1),
    ("remove_on_exec", 1),
    ("sigtrap", 1),
    ("defer_callchain", 1),
    ("defer_output", 1),
)


class perf_event_attr(ctypes.Structure):
    """``struct perf_event_attr`` (PERF_ATTR_SIZE_VER8); a new one is zeroed with ``size`` set."""

    _anonymous_ = ("_period", "_wakeup", "_config1", "_config2")
    _fields_ = (
        ("type", c_uint32),
        ("size", c_uint32),
        ("config", c_uint64),
        ("_period", _SamplePeriod),
        ("sample_type", c_uint64),
        ("read_format", c_uint64),
        *((name, c_uint64, bits) for name, bits in ATTR_FLAGS),
        ("_reserved_1", c_uint64, 64 - sum(bits for _, bits in ATTR_FLAGS)),
        ("_wakeup", _Wakeup),
        ("bp_type", c_uint32),
        ("_config1", _Config1),
        ("_config2", _Config2),
        ("branch_sample_type", c_uint64),
        ("sample_regs_user", c_uint64),
        ("sample_stack_user", c_uint32),
        ("clockid", c_int32),
        ("sample_regs_intr", c_uint64),
        ("aux_watermark", c_uint32),
        ("sample_max_stack", c_uint16),
        ("_reserved_2", c_uint16),
        ("aux_sample_size", c_uint32),
        ("aux_action", c_uint32),  # AUX_START_PAUSED | AUX_PAUSE | AUX_RESUME (Linux 6.13+)
        ("sig_data", c_uint64),
        ("config3", c_uint64),
    )

    def __init__(self, **fields):
        super().__init__(**fields)
        if not self.size:
            self.size = ctypes.sizeof(self)
