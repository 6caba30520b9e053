"""perf_event_open at the syscall boundary: the one-line errors of each errno, and the real syscalls.

The messages are built from an errno, so every failure can be checked without
making it happen.  The syscalls run against the real kernel with a software
event (no AUX area, so the kernel's AUX checks are reached but no trace is
made).
"""

import errno
import threading

import pytest
from support.perf_events import dummy_attr, open_dummy, written

from lldb_trace.bundle.model import TscConversion
from lldb_trace.capture.intel_pt import perf_event as pe
from lldb_trace.capture.intel_pt import perf_event_errors as errors
from lldb_trace.perf.attr import perf_event_attr

PT_BRANCH = 1 | 1 << 13  # intel_pt's "pt" and "branch" config bits


# -- error messages --------------------------------------------------------------------------------


def _attr(pmu_type=8, config=PT_BRANCH):
    return perf_event_attr(type=pmu_type, config=config)


@pytest.mark.parametrize("err", [errno.EACCES, errno.EPERM])
def test_open_error_permission(tmp_path, err):
    paranoid = written(tmp_path / "paranoid", "3\n")
    error = errors.open_error(err, "Intel PT for thread 42", pid=42, attr=_attr(), paranoid_path=paranoid, hint="H")
    assert isinstance(error, errors.PerfPermissionError)
    assert error.errno == err
    assert str(error) == (
        f"cannot open Intel PT for thread 42: permission denied ({errno.errorcode[err]},"
        " kernel.perf_event_paranoid is 3): run 'sudo sysctl kernel.perf_event_paranoid=-1', or run as root or"
        " with CAP_PERFMON (tracing another user's process always needs root); H"
    )
    unreadable = errors.open_error(err, "x", paranoid_path=tmp_path / "none")
    assert "kernel.perf_event_paranoid is unreadable" in str(unreadable)


def test_open_error_enoent():
    error = errors.open_error(errno.ENOENT, "Intel PT for thread 7", attr=_attr(pmu_type=9), hint="H")
    assert isinstance(error, errors.PerfUnsupportedError)
    assert str(error) == (
        "cannot open Intel PT for thread 7: the kernel has no PMU of type 9 (ENOENT; inside a VM Intel PT is"
        " usually not passed through); H"
    )


def test_open_error_einval():
    error = errors.open_error(errno.EINVAL, "Intel PT for thread 7", attr=_attr(config=0x402001))
    assert isinstance(error, errors.PerfUnsupportedError)
    assert error.errno == errno.EINVAL
    assert "rejected its settings (config 0x402001) (EINVAL): leave out --tsc and --psb-period" in str(error)


@pytest.mark.parametrize(
    "err, cls, text",
    [
        (errno.EBUSY, errors.PerfBusyError, "the PMU is busy (EBUSY): another tracer"),
        (errno.ESRCH, errors.PerfNoSuchThreadError, "thread 42 does not exist (ESRCH)"),
        (errno.EMFILE, errors.PerfResourceError, "too many open files (EMFILE): raise the limit with 'ulimit -n'"),
        (errno.ENODEV, errors.PerfUnsupportedError, "does not support it (ENODEV)"),
        (errno.EOPNOTSUPP, errors.PerfUnsupportedError, "does not support it (EOPNOTSUPP)"),
        (errno.E2BIG, errors.PerfUnsupportedError, "the kernel is too old for this perf_event_attr (it expects 136"),
        (errno.EIO, errors.PerfEventError, "perf_event_open failed with EIO (Input/output error)"),
    ],
)
def test_open_error_others(err, cls, text):
    error = errors.open_error(err, "Intel PT for thread 42", pid=42, attr=_attr())
    assert type(error) is cls
    assert text in str(error)
    assert "\n" not in str(error)


def test_mmap_errors(tmp_path):
    mlock = written(tmp_path / "mlock", "516\n")
    error = errors.mmap_error(errno.EPERM, "trace buffer", 1 << 20, mlock_path=mlock)
    assert isinstance(error, errors.PerfResourceError)
    assert str(error) == (
        "cannot map the 1024 KiB trace buffer: it exceeds the locked-memory allowance for perf buffers"
        " (kernel.perf_event_mlock_kb is 516 KiB, EPERM): use a smaller buffer (-b), raise it with"
        " 'sudo sysctl kernel.perf_event_mlock_kb=<KiB>', or run as root"
    )
    assert "smaller buffer" in str(errors.mmap_error(errno.ENOMEM, "trace buffer", 8192))
    assert isinstance(errors.mmap_error(errno.EOPNOTSUPP, "x", 4096), errors.PerfUnsupportedError)
    assert "mmap failed with EINVAL" in str(errors.mmap_error(errno.EINVAL, "x", 4096))


# -- the real syscalls, with a software event ------------------------------------------------------


@pytest.mark.parametrize("data_pages", [0, 1, 2, 8])
def test_real_ring_mapping(data_pages):
    with open_dummy() as event:
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
    with open_dummy() as event, pytest.raises(ValueError, match="power of two"):
        event.map_ring(3)


def test_real_aux_mapping_reaches_the_kernels_aux_check():
    """The kernel checks aux_offset/aux_size (EINVAL) before it asks whether the event has an AUX area
    (EOPNOTSUPP), so EOPNOTSUPP here means the offsets we wrote were accepted."""
    with open_dummy() as event:
        event.map_ring(0)
        with pytest.raises(errors.PerfUnsupportedError) as info:
            event.map_aux(4)
        assert info.value.errno == errno.EOPNOTSUPP
        assert event.header.aux_offset == pe.PAGE_SIZE
        assert event.header.aux_size == 4 * pe.PAGE_SIZE
    with open_dummy() as event:
        event.map_ring(2)
        event.header.aux_offset = pe.PAGE_SIZE  # overlaps the data area
        event.header.aux_size = pe.PAGE_SIZE
        with pytest.raises(errors.PerfEventError) as info:
            pe.MappedArea(event.fd, pe.PAGE_SIZE, 1, pe.PAGE_SIZE, "AUX area")
        assert info.value.errno == errno.EINVAL


def test_real_open_errors():
    open_dummy().close()  # skips when perf events are not allowed at all
    with pytest.raises(errors.PerfNoSuchThreadError, match="thread 2147483632 does not exist"):
        pe.PerfEvent.open(dummy_attr(), 0x7FFFFFF0, what="dummy event")
    bogus = perf_event_attr(type=0x7FFF0000)
    with pytest.raises(errors.PerfUnsupportedError, match="no PMU of type 2147418112") as info:
        pe.PerfEvent.open(bogus, threading.get_native_id(), what="bogus event", hint="H")
    assert info.value.errno == errno.ENOENT
    assert str(info.value).endswith("; H")
