"""The perf kernel ABI (lldb_trace.perf) against <linux/perf_event.h> as the C compiler sees it.

A C probe prints every size, offset, flag bit, ioctl number and constant the
installed header defines; each must equal ours.  The header describes records
only in comments, so the record walk is checked on records packed as the
kernel writes them.
"""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lldb_trace import perf
from lldb_trace.capture.intel_pt import perf_event
from lldb_trace.perf import attr as perf_attr
from lldb_trace.perf import ioctls, mmap_page

HEADER = Path("/usr/include/linux/perf_event.h")

ATTR_FIELDS = [
    "type",
    "size",
    "config",
    "sample_period",
    "sample_freq",
    "sample_type",
    "read_format",
    "wakeup_events",
    "wakeup_watermark",
    "bp_type",
    "bp_addr",
    "kprobe_func",
    "uprobe_path",
    "config1",
    "bp_len",
    "kprobe_addr",
    "probe_offset",
    "config2",
    "branch_sample_type",
    "sample_regs_user",
    "sample_stack_user",
    "clockid",
    "sample_regs_intr",
    "aux_watermark",
    "sample_max_stack",
    "aux_sample_size",
]
PAGE_FIELDS = [
    "version",
    "compat_version",
    "lock",
    "index",
    "offset",
    "time_enabled",
    "time_running",
    "capabilities",
    "pmc_width",
    "time_shift",
    "time_mult",
    "time_offset",
    "time_zero",
    "size",
    "time_cycles",
    "time_mask",
    "data_head",
    "data_tail",
    "data_offset",
    "data_size",
    "aux_head",
    "aux_tail",
    "aux_offset",
    "aux_size",
]
IOCTLS = [
    "ENABLE",
    "DISABLE",
    "REFRESH",
    "RESET",
    "PERIOD",
    "SET_OUTPUT",
    "SET_FILTER",
    "ID",
    "SET_BPF",
    "PAUSE_OUTPUT",
    "QUERY_BPF",
    "MODIFY_ATTRIBUTES",
]
CONSTANTS = [
    (perf_attr, "PERF_TYPE_SOFTWARE"),
    (perf_attr, "PERF_COUNT_SW_DUMMY"),
    (perf_attr, "PERF_FLAG_FD_CLOEXEC"),
    (perf_attr, "PERF_FLAG_PID_CGROUP"),
    (perf_attr, "PERF_ATTR_SIZE_VER0"),
    (perf_attr, "PERF_ATTR_SIZE_VER5"),
    (perf_attr, "PERF_ATTR_SIZE_VER7"),
    (ioctls, "PERF_IOC_FLAG_GROUP"),
    (perf_event, "SYS_perf_event_open"),
]


def _probe_source(header_text):
    """A C program printing the header's facts; fields the installed header lacks are left out."""

    def has(name):
        return re.search(rf"\b{name}\b", header_text) is not None

    attr_fields = [*ATTR_FIELDS, *(name for name in ("sig_data", "config3") if has(name))]
    flags = [name for name, _ in perf_attr.ATTR_FLAGS if re.search(rf"\b{name}\s*:", header_text)]
    lines = [
        "#include <stdio.h>",
        "#include <stddef.h>",
        "#include <string.h>",
        "#include <sys/syscall.h>",
        "#include <linux/perf_event.h>",
        "int main(void) {",
        'printf("sizeof attr %zu\\n", sizeof(struct perf_event_attr));',
        'printf("sizeof page %zu\\n", sizeof(struct perf_event_mmap_page));',
        'printf("offsetof attr._reserved_2 %zu\\n", offsetof(struct perf_event_attr, __reserved_2));',
    ]
    lines += [f'printf("offsetof attr.{f} %zu\\n", offsetof(struct perf_event_attr, {f}));' for f in attr_fields]
    lines += [f'printf("offsetof page.{f} %zu\\n", offsetof(struct perf_event_mmap_page, {f}));' for f in PAGE_FIELDS]
    for name in flags:
        value = 3 if name == "precise_ip" else 1
        lines.append(
            f"{{ struct perf_event_attr a; unsigned long long w; memset(&a, 0, sizeof a); a.{name} = {value};"
            f' memcpy(&w, (char *)&a + 40, 8); printf("flag attr.{name} %llu\\n", w); }}'
        )
    for name in ("cap_user_rdpmc", "cap_user_time", "cap_user_time_zero", "cap_user_time_short"):
        lines.append(
            f"{{ struct perf_event_mmap_page p; memset(&p, 0, sizeof p); p.{name} = 1;"
            f' printf("cap page.{name} %llu\\n", (unsigned long long)p.capabilities); }}'
        )
    lines += [f'printf("ioctl {n} %lu\\n", (unsigned long)PERF_EVENT_IOC_{n});' for n in IOCTLS]
    lines += [f'printf("const {n} %lu\\n", (unsigned long){n});' for _, n in CONSTANTS]
    if has("PERF_ATTR_SIZE_VER8"):
        lines.append('printf("const PERF_ATTR_SIZE_VER8 %lu\\n", (unsigned long)PERF_ATTR_SIZE_VER8);')
    lines += ["return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def header_facts(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is needed to compile the layout probe (scripts/setup.sh test installs it)")
    if not HEADER.exists():
        pytest.skip(f"{HEADER} missing: apt-get install linux-libc-dev")
    folder = tmp_path_factory.mktemp("perf_layout")
    (folder / "probe.c").write_text(_probe_source(HEADER.read_text()))
    subprocess.run(["gcc", "-o", str(folder / "probe"), str(folder / "probe.c")], check=True)
    output = subprocess.run([str(folder / "probe")], capture_output=True, text=True, check=True).stdout
    facts = {}
    for line in output.splitlines():
        kind, name, value = line.split()
        facts[(kind, name)] = int(value)
    return facts


def test_attr_size(header_facts):
    ours = ctypes.sizeof(perf_attr.perf_event_attr)
    assert ours == perf_attr.PERF_ATTR_SIZE_VER8 == 136
    assert perf_attr.perf_event_attr().size == ours
    theirs = header_facts[("sizeof", "attr")]
    # An older header stops at an earlier PERF_ATTR_SIZE_VER; ours only adds fields after its end.
    assert theirs <= ours
    assert theirs in (perf_attr.PERF_ATTR_SIZE_VER7, perf_attr.PERF_ATTR_SIZE_VER8, 144)
    if ("const", "PERF_ATTR_SIZE_VER8") in header_facts:
        assert header_facts[("const", "PERF_ATTR_SIZE_VER8")] == perf_attr.PERF_ATTR_SIZE_VER8


def test_attr_offsets(header_facts):
    offsets = {
        name[5:]: value for (kind, name), value in header_facts.items() if kind == "offsetof" and name[:5] == "attr."
    }
    assert set(ATTR_FIELDS) <= set(offsets)
    for field, offset in offsets.items():
        assert getattr(perf_attr.perf_event_attr, field).offset == offset, field
    if "config3" not in offsets:  # a header older than Linux 6.3: config3 follows sig_data
        assert perf_attr.perf_event_attr.config3.offset == offsets["sig_data"] + 8 == header_facts[("sizeof", "attr")]
    # aux_action sits between aux_sample_size and sig_data, where older headers have __reserved_3.
    assert perf_attr.perf_event_attr.aux_action.offset == header_facts[("offsetof", "attr.aux_sample_size")] + 4


def test_attr_flag_bits(header_facts):
    flags = {name.split(".", 1)[1]: value for (kind, name), value in header_facts.items() if kind == "flag"}
    assert {"disabled", "exclude_kernel", "exclude_hv", "inherit", "precise_ip", "sigtrap"} <= set(flags)
    for name, expected in flags.items():
        attr = perf_attr.perf_event_attr()
        setattr(attr, name, 3 if name == "precise_ip" else 1)
        word = int.from_bytes(bytes(attr)[40:48], "little")
        assert word == expected, name
    # the bits we have beyond the header's are its reserved bits
    attr = perf_attr.perf_event_attr()
    for name, _ in perf_attr.ATTR_FLAGS:
        setattr(attr, name, 3 if name == "precise_ip" else 1)
    assert int.from_bytes(bytes(attr)[40:48], "little") == (1 << sum(bits for _, bits in perf_attr.ATTR_FLAGS)) - 1


def test_mmap_page_layout(header_facts):
    page = mmap_page.perf_event_mmap_page
    assert ctypes.sizeof(page) == header_facts[("sizeof", "page")] == 1088
    for field in PAGE_FIELDS:
        assert getattr(page, field).offset == header_facts[("offsetof", f"page.{field}")], field
    assert page.data_head.offset == 1024
    assert page.aux_size.offset == 1080
    assert header_facts[("cap", "page.cap_user_rdpmc")] == mmap_page.CAP_USER_RDPMC
    assert header_facts[("cap", "page.cap_user_time")] == mmap_page.CAP_USER_TIME
    assert header_facts[("cap", "page.cap_user_time_zero")] == mmap_page.CAP_USER_TIME_ZERO
    assert header_facts[("cap", "page.cap_user_time_short")] == mmap_page.CAP_USER_TIME_SHORT


def test_ioctl_numbers_and_constants(header_facts):
    for name in IOCTLS:
        assert getattr(ioctls, f"PERF_EVENT_IOC_{name}") == header_facts[("ioctl", name)], name
    for module, name in CONSTANTS:
        assert getattr(module, name) == header_facts[("const", name)], name


# -- records -----------------------------------------------------------------------------------------


def test_records_are_walked_to_the_last_whole_one():
    switch = perf.pack_switch_record(False, 7, 8, 0, 0, 1000)
    data = perf.pack_lost_record(2, 900) + switch + switch[:20]  # the bytes end inside the third record
    lost, whole = perf.walk_records(data)
    assert (lost.offset, lost.size) == (0, 40) and lost.type in perf.LOSS_RECORD_TYPES
    assert (whole.offset, whole.type, whole.size) == (40, perf.PERF_RECORD_SWITCH_CPU_WIDE, 32)
    assert perf.unpack_switch_record(data, whole) == perf.SwitchCpuWide(False, False, 7, 8, 0, 0, 1000)
    with pytest.raises(perf.PerfRecordError) as caught:
        list(perf.walk_records(switch + bytes(8)))  # a header of zeros: size 0
    assert (caught.value.offset, caught.value.reason) == (32, "its size is 0 bytes, less than a perf record header")
