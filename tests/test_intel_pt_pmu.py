"""The Intel PT capture backend, tested at the syscall boundary.

Layouts are checked against <linux/perf_event.h> as the C compiler sees it;
sysfs parsing against fake trees written the way the kernel writes them;
the perf syscalls against the real kernel with a software event (no AUX
area, so the kernel's AUX checks are reached but no trace is made); the
read logic against a fake event.  Only the last test needs Intel PT.
"""

import ctypes
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lldb_trace.bundle.model import TscConversion
from lldb_trace.capture import intel_pt_pmu as ipt
from lldb_trace.capture import perf_event as pe

HEADER = Path("/usr/include/linux/perf_event.h")
REAL_SYSFS = Path(ipt.SYSFS_ROOT)

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
    "PERF_TYPE_SOFTWARE",
    "PERF_COUNT_SW_DUMMY",
    "PERF_FLAG_FD_CLOEXEC",
    "PERF_FLAG_PID_CGROUP",
    "PERF_ATTR_SIZE_VER0",
    "PERF_ATTR_SIZE_VER5",
    "PERF_ATTR_SIZE_VER7",
    "PERF_IOC_FLAG_GROUP",
    "SYS_perf_event_open",
]


# -- layout against the C compiler ---------------------------------------------------------------------


def _probe_source(header_text):
    """A C program printing the header's facts; fields the installed header lacks are left out."""

    def has(name):
        return re.search(rf"\b{name}\b", header_text) is not None

    attr_fields = [*ATTR_FIELDS, *(name for name in ("sig_data", "config3") if has(name))]
    flags = [name for name, _ in pe.ATTR_FLAGS if re.search(rf"\b{name}\s*:", header_text)]
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
    lines += [f'printf("const {n} %lu\\n", (unsigned long){n});' for n in CONSTANTS]
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
    ours = ctypes.sizeof(pe.perf_event_attr)
    assert ours == pe.PERF_ATTR_SIZE_VER8 == 136
    assert pe.perf_event_attr().size == ours
    theirs = header_facts[("sizeof", "attr")]
    # An older header stops at an earlier PERF_ATTR_SIZE_VER; ours only adds fields after its end.
    assert theirs <= ours
    assert theirs in (pe.PERF_ATTR_SIZE_VER7, pe.PERF_ATTR_SIZE_VER8, 144)
    if ("const", "PERF_ATTR_SIZE_VER8") in header_facts:
        assert header_facts[("const", "PERF_ATTR_SIZE_VER8")] == pe.PERF_ATTR_SIZE_VER8


def test_attr_offsets(header_facts):
    offsets = {
        name[5:]: value for (kind, name), value in header_facts.items() if kind == "offsetof" and name[:5] == "attr."
    }
    assert set(ATTR_FIELDS) <= set(offsets)
    for field, offset in offsets.items():
        assert getattr(pe.perf_event_attr, field).offset == offset, field
    if "config3" not in offsets:  # a header older than Linux 6.3: config3 follows sig_data
        assert pe.perf_event_attr.config3.offset == offsets["sig_data"] + 8 == header_facts[("sizeof", "attr")]
    # aux_action sits between aux_sample_size and sig_data, where older headers have __reserved_3.
    assert pe.perf_event_attr.aux_action.offset == header_facts[("offsetof", "attr.aux_sample_size")] + 4


def test_attr_flag_bits(header_facts):
    flags = {name.split(".", 1)[1]: value for (kind, name), value in header_facts.items() if kind == "flag"}
    assert {"disabled", "exclude_kernel", "exclude_hv", "inherit", "precise_ip", "sigtrap"} <= set(flags)
    for name, expected in flags.items():
        attr = pe.perf_event_attr()
        setattr(attr, name, 3 if name == "precise_ip" else 1)
        word = int.from_bytes(bytes(attr)[40:48], "little")
        assert word == expected, name
    # the bits we have beyond the header's are its reserved bits
    attr = pe.perf_event_attr()
    for name, _ in pe.ATTR_FLAGS:
        setattr(attr, name, 3 if name == "precise_ip" else 1)
    assert int.from_bytes(bytes(attr)[40:48], "little") == (1 << sum(bits for _, bits in pe.ATTR_FLAGS)) - 1


def test_mmap_page_layout(header_facts):
    assert ctypes.sizeof(pe.perf_event_mmap_page) == header_facts[("sizeof", "page")] == 1088
    for field in PAGE_FIELDS:
        assert getattr(pe.perf_event_mmap_page, field).offset == header_facts[("offsetof", f"page.{field}")], field
    assert pe.perf_event_mmap_page.data_head.offset == 1024
    assert pe.perf_event_mmap_page.aux_size.offset == 1080
    assert header_facts[("cap", "page.cap_user_rdpmc")] == pe.CAP_USER_RDPMC
    assert header_facts[("cap", "page.cap_user_time")] == pe.CAP_USER_TIME
    assert header_facts[("cap", "page.cap_user_time_zero")] == pe.CAP_USER_TIME_ZERO
    assert header_facts[("cap", "page.cap_user_time_short")] == pe.CAP_USER_TIME_SHORT


def test_ioctl_numbers_and_constants(header_facts):
    for name in IOCTLS:
        assert getattr(pe, f"PERF_EVENT_IOC_{name}") == header_facts[("ioctl", name)], name
    for name in CONSTANTS:
        assert getattr(pe, name) == header_facts[("const", name)], name


# -- sysfs -----------------------------------------------------------------------------------------

KERNEL_FORMATS = {
    "pt": "config:0",
    "cyc": "config:1",
    "pwr_evt": "config:4",
    "fup_on_ptw": "config:5",
    "mtc": "config:9",
    "tsc": "config:10",
    "noretcomp": "config:11",
    "ptw": "config:12",
    "branch": "config:13",
    "mtc_period": "config:14-17",
    "cyc_thresh": "config:19-22",
    "psb_period": "config:24-27",
    "event": "config:31",
    "notnt": "config:55",
}
KERNEL_CAPS = {
    "psb_cyc": 1,
    "psb_periods": 0x3F,
    "mtc": 1,
    "mtc_periods": 0x249,
    "cycle_thresholds": 0x3FFF,
    "ip_filtering": 1,
    "num_address_ranges": 2,
    "topa_output": 1,
    "single_range_output": 1,
    "ptwrite": 0,
}


def make_sysfs(root, pmu_type=8, formats=KERNEL_FORMATS, caps=KERNEL_CAPS):
    """A fake intel_pt directory with the kernel's text formats ("%d\\n", "config:N\\n", "%x\\n")."""
    (root / "format").mkdir(parents=True)
    (root / "caps").mkdir()
    (root / "type").write_text(f"{pmu_type}\n")
    (root / "nr_addr_filters").write_text("2\n")
    for name, text in formats.items():
        (root / "format" / name).write_text(text + "\n")
    for name, value in caps.items():
        (root / "caps" / name).write_text(f"{value:x}\n")
    return root


@pytest.fixture
def fake_pmu(tmp_path):
    return make_sysfs(tmp_path / "intel_pt")


def test_pmu_info_reads_type_formats_and_caps(fake_pmu):
    pmu = ipt.pmu_info(fake_pmu)
    assert pmu.type == 8
    assert set(pmu.formats) == set(KERNEL_FORMATS)
    assert pmu.formats["tsc"] == ipt.FormatField("tsc", "config", ((10, 10),))
    assert pmu.formats["psb_period"].ranges == ((24, 27),)
    assert pmu.formats["psb_period"].width == 4
    assert pmu.formats["notnt"].ranges == ((55, 55),)
    assert pmu.caps == KERNEL_CAPS
    assert pmu.psb_periods == (0, 1, 2, 3, 4, 5)


def test_caps_are_hex(tmp_path):
    pmu = ipt.pmu_info(make_sysfs(tmp_path / "pt", caps={"psb_cyc": 1, "psb_periods": 0x10}))
    assert pmu.cap("psb_periods") == 16  # the file says "10"
    assert pmu.psb_periods == (0, 4)
    assert pmu.cap("missing") == 0


@pytest.mark.parametrize(
    "text, field, ranges",
    [
        ("config:0\n", "config", ((0, 0),)),
        ("config:24-27", "config", ((24, 27),)),
        ("config1:0-3,8-11\n", "config1", ((0, 3), (8, 11))),
        ("config2:63", "config2", ((63, 63),)),
    ],
)
def test_parse_format(text, field, ranges):
    assert ipt.parse_format("x", text) == ipt.FormatField("x", field, ranges)


@pytest.mark.parametrize("text", ["", "config", "config:", "config:a", "conf:1", "config:5-3", "config:64", "c:1-2"])
def test_parse_format_rejects(text):
    with pytest.raises(ipt.IntelPtUnavailableError, match="format/x"):
        ipt.parse_format("x", text)


def test_format_field_encode_split_ranges():
    form = ipt.parse_format("f", "config:0-1,8-9")
    assert form.encode(0b1111) == 0b11 | 0b11 << 8
    assert form.encode(0b0110) == 0b10 | 0b01 << 8
    with pytest.raises(ipt.IntelPtConfigError, match="4-bit field"):
        form.encode(16)


# -- config bits -----------------------------------------------------------------------------------

PT_BRANCH = 1 | 1 << 13


def test_config_default_traces_branches(fake_pmu):
    assert ipt.config_for(ipt.pmu_info(fake_pmu)) == PT_BRANCH


def test_config_without_pt_format_leaves_branch_to_the_kernel(tmp_path):
    formats = {k: v for k, v in KERNEL_FORMATS.items() if k not in ("pt", "branch")}
    pmu = ipt.pmu_info(make_sysfs(tmp_path / "old", formats=formats))
    assert ipt.config_for(pmu) == 0
    assert ipt.config_for(pmu, tsc=True) == 1 << 10


def test_config_tsc_and_psb_period(fake_pmu):
    pmu = ipt.pmu_info(fake_pmu)
    assert ipt.config_for(pmu, tsc=True) == PT_BRANCH | 1 << 10
    assert ipt.config_for(pmu, psb_period=3) == PT_BRANCH | 3 << 24
    assert ipt.config_for(pmu, tsc=True, psb_period=5) == PT_BRANCH | 1 << 10 | 5 << 24
    assert ipt.config_for(pmu, psb_period=0) == PT_BRANCH


def test_config_follows_the_advertised_bits(tmp_path):
    formats = {**KERNEL_FORMATS, "tsc": "config:40", "psb_period": "config:44-47"}
    pmu = ipt.pmu_info(make_sysfs(tmp_path / "moved", formats=formats))
    assert ipt.config_for(pmu, tsc=True, psb_period=2) == PT_BRANCH | 1 << 40 | 2 << 44


def test_psb_period_not_allowed_lists_the_allowed_values(fake_pmu):
    pmu = ipt.pmu_info(fake_pmu)
    with pytest.raises(ipt.IntelPtConfigError) as info:
        ipt.config_for(pmu, psb_period=6)
    message = str(info.value)
    assert "psb_period 6 is not supported" in message
    assert "0 (2 KiB), 1 (4 KiB), 2 (8 KiB), 3 (16 KiB), 4 (32 KiB), 5 (64 KiB)" in message
    assert "\n" not in message
    for bad in (-1, 16, 99):
        with pytest.raises(ipt.IntelPtConfigError, match="is not supported"):
            ipt.config_for(pmu, psb_period=bad)
    for bad in (True, 2.0, "3"):
        with pytest.raises(ipt.IntelPtConfigError, match="integer"):
            ipt.config_for(pmu, psb_period=bad)


def test_psb_period_on_a_cpu_without_configurable_psb(tmp_path):
    pmu = ipt.pmu_info(make_sysfs(tmp_path / "fixed", caps={**KERNEL_CAPS, "psb_cyc": 0}))
    assert pmu.psb_periods == ()
    with pytest.raises(ipt.IntelPtConfigError, match=r"fixed PSB period \(caps/psb_cyc is 0"):
        ipt.config_for(pmu, psb_period=1)


def test_options_the_pmu_does_not_advertise(tmp_path):
    formats = {k: v for k, v in KERNEL_FORMATS.items() if k not in ("tsc", "psb_period")}
    pmu = ipt.pmu_info(make_sysfs(tmp_path / "bare", formats=formats))
    with pytest.raises(ipt.IntelPtConfigError, match=r"cannot add timestamps \(--tsc\) \(no format/tsc"):
        ipt.config_for(pmu, tsc=True)
    with pytest.raises(ipt.IntelPtConfigError, match="no format/psb_period"):
        ipt.config_for(pmu, psb_period=1)


def test_psb_period_encoding():
    assert ipt.psb_period_encoding(2048) == 0
    assert ipt.psb_period_encoding(4096) == 1
    assert ipt.psb_period_encoding(64 * 1024) == 5
    for bad in (0, 1024, 3000, -2048, True):
        with pytest.raises(ipt.IntelPtConfigError, match="powers of two from 2048"):
            ipt.psb_period_encoding(bad)


# -- buffer size -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kb, pages", [(4, 1), (8, 2), (64, 16), (1024, 256), (1 << 20, 1 << 18)])
def test_buffer_pages(kb, pages):
    assert pe.PAGE_SIZE == 4096
    assert ipt.buffer_pages(kb) == pages


@pytest.mark.parametrize("kb", [0, 1, 2, 3, 6, 12, 100, -4, True, 4.0, "8", None])
def test_buffer_pages_rejects(kb):
    with pytest.raises(ipt.IntelPtConfigError) as info:
        ipt.buffer_pages(kb)
    assert str(info.value) == f"-b {kb}: the trace buffer size must be a power of two of at least 4 KiB (4, 8, 16, ...)"


# -- wrap logic ------------------------------------------------------------------------------------


def write_ring(size, stream):
    """A ring of ``size`` zero bytes after a circular writer wrote ``stream`` into it."""
    ring = bytearray(size)
    for i, byte in enumerate(stream):
        ring[i % size] = byte
    return bytes(ring)


def stream_of(n, seed=0):
    return bytes((i * 7 + seed) % 255 + 1 for i in range(n))  # never zero


@pytest.mark.parametrize("size", [1, 8, 16, 4096])
@pytest.mark.parametrize("written", [0, 1, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 4096, 4097, 9000])
def test_snapshot_bytes_matches_a_circular_writer(size, written):
    stream = stream_of(written)
    ring = write_ring(size, stream)
    assert ipt.snapshot_bytes(ring, written) == stream[max(0, written - size) :]


@pytest.mark.parametrize("size", [8, 4096])
def test_snapshot_bytes_at_exact_multiples_of_the_size(size):
    ring = bytes(range(1, size + 1)) if size < 256 else stream_of(size)
    for laps in (1, 2, 3, 1000):
        assert ipt.snapshot_bytes(ring, laps * size) == ring  # the oldest byte is at offset 0
    assert ipt.snapshot_bytes(ring, 0) == b""
    assert ipt.snapshot_bytes(ring, size - 1) == ring[: size - 1]


@pytest.mark.parametrize("head", [2**64 - 1, 2**64 - 4096, 2**63 + 3, 2**32 + 5, 2**64 + 7])
def test_snapshot_bytes_with_huge_heads(head):
    size = 4096
    expected = stream_of(size, seed=head % 251)
    start = head % size
    ring = bytearray(size)
    for i, byte in enumerate(expected):  # expected[0] is the oldest byte, stored at head % size
        ring[(start + i) % size] = byte
    assert ipt.snapshot_bytes(bytes(ring), head) == expected


def test_snapshot_bytes_accepts_buffers_and_views():
    ring = bytearray(b"efgabcd")
    assert ipt.snapshot_bytes(ring, 10) == b"abcdefg"
    assert ipt.snapshot_bytes(memoryview(bytes(ring)), 10) == b"abcdefg"
    assert ipt.snapshot_bytes(b"", 5) == b""
    with pytest.raises(ValueError, match="negative"):
        ipt.snapshot_bytes(ring, -1)


@pytest.mark.parametrize("written", [0, 1, 100, 4095, 4096, 4097, 8191, 8192, 10000, 40000])
def test_snapshot_head_recovers_in_buffer_offsets(written):
    """The Intel PT driver reports a snapshot buffer's head as an offset inside it."""
    size = 4096
    stream = stream_of(written, seed=3)
    ring = write_ring(size, stream)
    raw = written % size
    head = ipt.snapshot_head(ring, raw)
    assert ipt.snapshot_bytes(ring, head) == stream[max(0, written - size) :]


def test_snapshot_head_keeps_running_counts():
    ring = stream_of(16)
    assert ipt.snapshot_head(ring, 16) == 16
    assert ipt.snapshot_head(ring, 2**64 - 1) == 2**64 - 1
    assert ipt.snapshot_head(b"", 0) == 0
    with pytest.raises(ValueError, match="negative"):
        ipt.snapshot_head(ring, -1)


def test_snapshot_head_zero_tail_loses_only_pad_bytes():
    """Wrapped, but the bytes after the head are all zero: only those zeros (PAD packets) are dropped."""
    size = 64
    stream = stream_of(30) + bytes(34) + stream_of(30, seed=9)  # 94 bytes; the ring's tail holds the zeros
    ring = write_ring(size, stream)
    raw = len(stream) % size
    assert ring[raw:] == bytes(size - raw)
    got = ipt.snapshot_bytes(ring, ipt.snapshot_head(ring, raw))
    full = stream[-size:]
    assert got == full[size - raw :]
    assert full[: size - raw] == bytes(size - raw)


# -- availability and error messages ---------------------------------------------------------------


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def not_root(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    return _write(tmp_path / "status", "Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t0000000000000000\n")


@pytest.mark.skipif(REAL_SYSFS.exists(), reason="this machine has an intel_pt PMU")
def test_check_available_without_intel_pt_here():
    with pytest.raises(ipt.IntelPtUnavailableError) as info:
        ipt.check_available()
    assert str(info.value) == (
        "this CPU has no Intel PT (no intel_pt PMU in /sys/bus/event_source/devices): use 'pt start --backend software'"
    )
    with pytest.raises(ipt.IntelPtUnavailableError, match="no intel_pt PMU"):
        ipt.ThreadTrace(threading.get_native_id())


def test_check_available_pmu_absent(tmp_path):
    with pytest.raises(ipt.IntelPtUnavailableError, match=f"no intel_pt PMU in {tmp_path}\\)"):
        ipt.check_available(tmp_path / "intel_pt", paranoid_path=_write(tmp_path / "p", "-1\n"))


def test_check_available_paranoid_3_not_root(fake_pmu, tmp_path, not_root):
    paranoid = _write(tmp_path / "perf_event_paranoid", "3\n")
    with pytest.raises(ipt.IntelPtPermissionError) as info:
        ipt.check_available(fake_pmu, paranoid, not_root)
    message = str(info.value)
    assert "kernel.perf_event_paranoid is 3" in message
    assert "sudo sysctl kernel.perf_event_paranoid=-1" in message
    assert "run as root or with CAP_PERFMON" in message
    assert "'pt start --backend software' works everywhere" in message
    assert "\n" not in message
    assert isinstance(info.value, ipt.IntelPtUnavailableError)


@pytest.mark.parametrize("level", ["2", "1", "0", "-1"])
def test_check_available_paranoid_2_or_less_allows_users(fake_pmu, tmp_path, not_root, level):
    paranoid = _write(tmp_path / "perf_event_paranoid", level + "\n")
    assert ipt.check_available(fake_pmu, paranoid, not_root).type == 8


def test_check_available_privileged_users_pass_paranoid_3(fake_pmu, tmp_path, monkeypatch, not_root):
    paranoid = _write(tmp_path / "perf_event_paranoid", "3\n")
    perfmon = _write(tmp_path / "status_perfmon", f"CapEff:\t{1 << ipt.CAP_PERFMON:016x}\n")
    assert ipt.check_available(fake_pmu, paranoid, perfmon).type == 8
    admin = _write(tmp_path / "status_admin", f"CapEff:\t{1 << ipt.CAP_SYS_ADMIN:016x}\n")
    assert ipt.check_available(fake_pmu, paranoid, admin).type == 8
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert ipt.check_available(fake_pmu, paranoid, not_root).type == 8


def test_check_available_unreadable_paranoid_is_left_to_the_kernel(fake_pmu, tmp_path, not_root):
    assert ipt.check_available(fake_pmu, tmp_path / "missing", not_root).type == 8


def _attr(pmu_type=8, config=PT_BRANCH):
    return pe.perf_event_attr(type=pmu_type, config=config)


@pytest.mark.parametrize("err", [errno.EACCES, errno.EPERM])
def test_open_error_permission(tmp_path, err):
    paranoid = _write(tmp_path / "paranoid", "3\n")
    error = pe.open_error(err, "Intel PT for thread 42", pid=42, attr=_attr(), paranoid_path=paranoid, hint="H")
    assert isinstance(error, pe.PerfPermissionError)
    assert error.errno == err
    assert str(error) == (
        f"cannot open Intel PT for thread 42: permission denied ({errno.errorcode[err]},"
        " kernel.perf_event_paranoid is 3): run 'sudo sysctl kernel.perf_event_paranoid=-1', or run as root or"
        " with CAP_PERFMON (tracing another user's process always needs root); H"
    )
    unreadable = pe.open_error(err, "x", paranoid_path=tmp_path / "none")
    assert "kernel.perf_event_paranoid is unreadable" in str(unreadable)


def test_open_error_enoent():
    error = pe.open_error(errno.ENOENT, "Intel PT for thread 7", attr=_attr(pmu_type=9), hint="H")
    assert isinstance(error, pe.PerfUnsupportedError)
    assert str(error) == (
        "cannot open Intel PT for thread 7: the kernel has no PMU of type 9 (ENOENT; inside a VM Intel PT is"
        " usually not passed through); H"
    )


def test_open_error_einval():
    error = pe.open_error(errno.EINVAL, "Intel PT for thread 7", attr=_attr(config=0x402001))
    assert isinstance(error, pe.PerfUnsupportedError)
    assert error.errno == errno.EINVAL
    assert "rejected its settings (config 0x402001) (EINVAL): leave out --tsc and --psb-period" in str(error)


@pytest.mark.parametrize(
    "err, cls, text",
    [
        (errno.EBUSY, pe.PerfBusyError, "the PMU is busy (EBUSY): another tracer"),
        (errno.ESRCH, pe.PerfNoSuchThreadError, "thread 42 does not exist (ESRCH)"),
        (errno.EMFILE, pe.PerfResourceError, "too many open files (EMFILE): raise the limit with 'ulimit -n'"),
        (errno.ENODEV, pe.PerfUnsupportedError, "does not support it (ENODEV)"),
        (errno.EOPNOTSUPP, pe.PerfUnsupportedError, "does not support it (EOPNOTSUPP)"),
        (errno.E2BIG, pe.PerfUnsupportedError, "the kernel is too old for this perf_event_attr (it expects 136"),
        (errno.EIO, pe.PerfEventError, "perf_event_open failed with EIO (Input/output error)"),
    ],
)
def test_open_error_others(err, cls, text):
    error = pe.open_error(err, "Intel PT for thread 42", pid=42, attr=_attr())
    assert type(error) is cls
    assert text in str(error)
    assert "\n" not in str(error)


def test_mmap_errors(tmp_path):
    mlock = _write(tmp_path / "mlock", "516\n")
    error = pe.mmap_error(errno.EPERM, "trace buffer", 1 << 20, mlock_path=mlock)
    assert isinstance(error, pe.PerfResourceError)
    assert str(error) == (
        "cannot map the 1024 KiB trace buffer: it exceeds the locked-memory allowance for perf buffers"
        " (kernel.perf_event_mlock_kb is 516 KiB, EPERM): use a smaller buffer (-b), raise it with"
        " 'sudo sysctl kernel.perf_event_mlock_kb=<KiB>', or run as root"
    )
    assert "smaller buffer" in str(pe.mmap_error(errno.ENOMEM, "trace buffer", 8192))
    assert isinstance(pe.mmap_error(errno.EOPNOTSUPP, "x", 4096), pe.PerfUnsupportedError)
    assert "mmap failed with EINVAL" in str(pe.mmap_error(errno.EINVAL, "x", 4096))


# -- the real syscalls, with a software event -------------------------------------------------------


def _dummy_attr(disabled=1):
    attr = pe.perf_event_attr(type=pe.PERF_TYPE_SOFTWARE, config=pe.PERF_COUNT_SW_DUMMY)
    attr.disabled = disabled
    attr.exclude_kernel = 1
    attr.exclude_hv = 1
    return attr


def _open_dummy(tid=None, disabled=1):
    try:
        return pe.PerfEvent.open(_dummy_attr(disabled), tid or threading.get_native_id(), what="dummy event")
    except pe.PerfPermissionError as exc:
        pytest.skip(f"perf_event_open is not allowed here: {exc}")


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("data_pages", [0, 1, 2, 8])
def test_real_ring_mapping(data_pages):
    with _open_dummy() as event:
        event.map_ring(data_pages)
        header = event.header
        assert header.data_offset == pe.PAGE_SIZE
        assert header.data_size == data_pages * pe.PAGE_SIZE
        assert header.aux_head == 0
        assert len(event.data_bytes()) == data_pages * pe.PAGE_SIZE
        assert event.enabled is False
        event.enable()
        assert event.enabled is True
        event.disable()
        assert event.enabled is False
        conversion = event.tsc_conversion()
        assert conversion is None or isinstance(conversion, TscConversion)
    assert event.closed


def test_real_ring_rejects_a_bad_page_count_before_the_kernel():
    with _open_dummy() as event, pytest.raises(ValueError, match="power of two"):
        event.map_ring(3)


def test_real_aux_mapping_reaches_the_kernels_aux_check():
    """The kernel checks aux_offset/aux_size (EINVAL) before it asks whether the event has an AUX area
    (EOPNOTSUPP), so EOPNOTSUPP here means the offsets we wrote were accepted."""
    with _open_dummy() as event:
        event.map_ring(0)
        with pytest.raises(pe.PerfUnsupportedError) as info:
            event.map_aux(4)
        assert info.value.errno == errno.EOPNOTSUPP
        assert event.header.aux_offset == pe.PAGE_SIZE
        assert event.header.aux_size == 4 * pe.PAGE_SIZE
    with _open_dummy() as event:
        event.map_ring(2)
        event.header.aux_offset = pe.PAGE_SIZE  # overlaps the data area
        event.header.aux_size = pe.PAGE_SIZE
        with pytest.raises(pe.PerfEventError) as info:
            pe.Mapping(event.fd, pe.PAGE_SIZE, 1, pe.PAGE_SIZE, "AUX area")
        assert info.value.errno == errno.EINVAL


def test_real_open_errors():
    _open_dummy().close()  # skips when perf events are not allowed at all
    with pytest.raises(pe.PerfNoSuchThreadError, match="thread 2147483632 does not exist"):
        pe.PerfEvent.open(_dummy_attr(), 0x7FFFFFF0, what="dummy event")
    bogus = pe.perf_event_attr(type=0x7FFF0000)
    with pytest.raises(pe.PerfUnsupportedError, match="no PMU of type 2147418112") as info:
        pe.PerfEvent.open(bogus, threading.get_native_id(), what="bogus event", hint="H")
    assert info.value.errno == errno.ENOENT
    assert str(info.value).endswith("; H")


def test_real_thread_trace_on_a_pmu_without_aux_cleans_up(tmp_path):
    _open_dummy().close()
    software = ipt.PmuInfo(tmp_path, pe.PERF_TYPE_SOFTWARE)  # no formats: config 0 = PERF_COUNT_SW_CPU_CLOCK
    before = _open_fds()
    with pytest.raises(pe.PerfUnsupportedError, match="EOPNOTSUPP"):
        ipt.ThreadTrace(threading.get_native_id(), 8, pmu=software)
    assert _open_fds() == before


def test_thread_trace_checks_options_before_opening(fake_pmu):
    pmu = ipt.pmu_info(fake_pmu)
    with pytest.raises(ipt.IntelPtConfigError, match="-b 3"):
        ipt.ThreadTrace(1, 3, pmu=pmu)
    with pytest.raises(ipt.IntelPtConfigError, match="psb_period 9"):
        ipt.ThreadTrace(1, 4, psb_period=9, pmu=pmu)


# -- ThreadTrace's read logic, with a fake event ---------------------------------------------------


class FakeEvent:
    """Stands for a PerfEvent whose AUX area is ``ring`` and whose kernel reports ``head``."""

    def __init__(self, size=16):
        self.ring = bytearray(size)
        self.head = 0
        self.enabled = True
        self.calls = []
        self.fail_copy = False
        self.closed = False

    def write(self, data):
        """What the hardware does in snapshot mode: write on, wrapping; report the offset."""
        for byte in data:
            self.ring[self.head] = byte
            self.head = (self.head + 1) % len(self.ring)

    @property
    def aux_size(self):
        return len(self.ring)

    @property
    def aux_head(self):
        self.calls.append("head")
        return self.head

    def aux_bytes(self):
        self.calls.append("copy")
        if self.fail_copy:
            raise RuntimeError("copy failed")
        return bytes(self.ring)

    def disable(self):
        self.calls.append("disable")
        self.enabled = False

    def enable(self):
        self.calls.append("enable")
        self.enabled = True

    def close(self):
        self.closed = True


def test_read_pauses_copies_and_resumes():
    event = FakeEvent()
    trace = ipt.ThreadTrace.from_event(5, event)
    event.write(b"abcde")
    assert trace.read() == b"abcde"
    assert event.calls == ["disable", "head", "copy", "enable"]
    assert event.enabled
    assert trace.buffer_size == 16


def test_read_after_wrap_is_in_trace_order():
    event = FakeEvent(size=8)
    trace = ipt.ThreadTrace.from_event(5, event)
    event.write(b"0123456789ABC")
    assert trace.read() == b"56789ABC"
    event.write(b"DE")
    assert trace.read() == b"789ABCDE"


def test_changed_tells_when_there_is_something_new():
    event = FakeEvent(size=8)
    trace = ipt.ThreadTrace.from_event(5, event)
    assert not trace.changed()
    event.write(b"xy")
    assert trace.changed()
    trace.read()
    assert not trace.changed()
    event.write(b"z")
    assert trace.changed()
    assert trace.read() == b"xyz"
    assert not trace.changed()


def test_read_resumes_even_when_the_copy_fails():
    event = FakeEvent()
    event.fail_copy = True
    trace = ipt.ThreadTrace.from_event(5, event)
    with pytest.raises(RuntimeError):
        trace.read()
    assert event.calls[-1] == "enable"
    assert event.enabled


def test_read_leaves_a_paused_event_paused():
    event = FakeEvent()
    event.enabled = False
    trace = ipt.ThreadTrace.from_event(5, event)
    event.write(b"q")
    assert trace.read() == b"q"
    assert "enable" not in event.calls and "disable" not in event.calls


def test_close():
    event = FakeEvent()
    with ipt.ThreadTrace.from_event(5, event) as trace:
        assert not trace.closed
    assert event.closed and trace.closed
    trace.close()  # twice is fine
    with pytest.raises(ipt.IntelPtUnavailableError, match="thread 5 is closed"):
        trace.read()
    with pytest.raises(ipt.IntelPtUnavailableError, match="closed"):
        trace.changed()


# -- hardware --------------------------------------------------------------------------------------

PSB = bytes([0x02, 0x82] * 8)


def _cpu_ticks(pid):
    """User plus system CPU time the process has used, in clock ticks (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _run_a_little(pid):
    """Let the stopped child run until it used CPU time of its own (progress, not a wall-clock wait); stop it again."""
    ticks = _cpu_ticks(pid)
    os.kill(pid, signal.SIGCONT)
    while _cpu_ticks(pid) < ticks + 2:
        time.sleep(0.01)  # polling the child's progress
    os.kill(pid, signal.SIGSTOP)
    os.waitpid(pid, os.WUNTRACED)  # returns once it is stopped


@pytest.mark.skipif(not REAL_SYSFS.exists(), reason="needs an Intel CPU with the intel_pt PMU")
def test_hardware_trace_of_a_busy_child():
    try:
        pmu = ipt.check_available()
    except ipt.IntelPtUnavailableError as exc:
        pytest.skip(str(exc))
    child = subprocess.Popen([sys.executable, "-c", "while True: sum(range(100))"])
    os.kill(child.pid, signal.SIGSTOP)
    os.waitpid(child.pid, os.WUNTRACED)
    try:
        try:
            trace = ipt.ThreadTrace(child.pid, 64, tsc=True, pmu=pmu)
        except pe.PerfPermissionError as exc:
            pytest.skip(str(exc))
        with trace:
            _run_a_little(child.pid)
            assert trace.changed()
            data = trace.read()
            assert 0 < len(data) <= 64 * 1024
            assert PSB in data
            assert not trace.changed()  # stopped: nothing new
            _run_a_little(child.pid)
            assert trace.changed()
            assert PSB in trace.read()
    finally:
        child.kill()
        child.wait()
