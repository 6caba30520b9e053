"""The intel_pt PMU (capture/intel_pt/pmu.py): its sysfs, config bits, buffer size and availability.

sysfs parsing is tested against fake trees written the way the kernel writes
them.  One thread's event has tests of its own (test_intel_pt_thread_event.py),
as do the perf layouts and syscalls (test_perf_abi.py, test_perf_event.py).
"""

import os
import threading
from pathlib import Path

import pytest
from support.perf_events import written

from lldb_trace.capture.intel_pt import pmu as ipt
from lldb_trace.capture.intel_pt.perf_event import PAGE_SIZE
from lldb_trace.capture.intel_pt.thread_event import IntelPtThreadEvent

REAL_SYSFS = Path(ipt.SYSFS_ROOT)


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
    assert PAGE_SIZE == 4096
    assert ipt.buffer_pages(kb) == pages


@pytest.mark.parametrize("kb", [0, 1, 2, 3, 6, 12, 100, -4, True, 4.0, "8", None])
def test_buffer_pages_rejects(kb):
    with pytest.raises(ipt.IntelPtConfigError) as info:
        ipt.buffer_pages(kb)
    assert str(info.value) == f"-b {kb}: the trace buffer size must be a power of two of at least 4 KiB (4, 8, 16, ...)"


# -- availability ----------------------------------------------------------------------------------


@pytest.fixture
def not_root(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    return written(tmp_path / "status", "Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t0000000000000000\n")


@pytest.mark.skipif(REAL_SYSFS.exists(), reason="this machine has an intel_pt PMU")
def test_check_available_without_intel_pt_here():
    with pytest.raises(ipt.IntelPtUnavailableError) as info:
        ipt.check_available()
    assert str(info.value) == (
        "this CPU has no Intel PT (no intel_pt PMU in /sys/bus/event_source/devices): use 'pt start --backend software'"
    )
    with pytest.raises(ipt.IntelPtUnavailableError, match="no intel_pt PMU"):
        IntelPtThreadEvent(threading.get_native_id())


def test_check_available_pmu_absent(tmp_path):
    with pytest.raises(ipt.IntelPtUnavailableError, match=f"no intel_pt PMU in {tmp_path}\\)"):
        ipt.check_available(tmp_path / "intel_pt", paranoid_path=written(tmp_path / "p", "-1\n"))


def test_check_available_paranoid_3_not_root(fake_pmu, tmp_path, not_root):
    paranoid = written(tmp_path / "perf_event_paranoid", "3\n")
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
    paranoid = written(tmp_path / "perf_event_paranoid", level + "\n")
    assert ipt.check_available(fake_pmu, paranoid, not_root).type == 8


def test_check_available_privileged_users_pass_paranoid_3(fake_pmu, tmp_path, monkeypatch, not_root):
    paranoid = written(tmp_path / "perf_event_paranoid", "3\n")
    perfmon = written(tmp_path / "status_perfmon", f"CapEff:\t{1 << ipt.CAP_PERFMON:016x}\n")
    assert ipt.check_available(fake_pmu, paranoid, perfmon).type == 8
    admin = written(tmp_path / "status_admin", f"CapEff:\t{1 << ipt.CAP_SYS_ADMIN:016x}\n")
    assert ipt.check_available(fake_pmu, paranoid, admin).type == 8
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert ipt.check_available(fake_pmu, paranoid, not_root).type == 8


def test_check_available_unreadable_paranoid_is_left_to_the_kernel(fake_pmu, tmp_path, not_root):
    assert ipt.check_available(fake_pmu, tmp_path / "missing", not_root).type == 8


# -- a thread event's options, checked against the PMU before opening ------------------------------


def test_thread_event_checks_options_before_opening(fake_pmu):
    pmu = ipt.pmu_info(fake_pmu)
    with pytest.raises(ipt.IntelPtConfigError, match="-b 3"):
        IntelPtThreadEvent(1, 3, pmu=pmu)
    with pytest.raises(ipt.IntelPtConfigError, match="psb_period 9"):
        IntelPtThreadEvent(1, 4, psb_period=9, pmu=pmu)
