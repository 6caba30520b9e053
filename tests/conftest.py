"""Shared fixtures: the bundled sample trace and its hand-checked ground truth."""

from pathlib import Path

import pytest
from support.libcalls_recording import record_libcalls

from lldb_trace import libipt
from lldb_trace.elf_info import ElfInfo

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "test_traces" / "sample"


@pytest.fixture(scope="session")
def sample_trace():
    return (SAMPLE / "4242.ipt").read_bytes()


@pytest.fixture(scope="session")
def sample_expected():
    return [int(line, 16) for line in (SAMPLE / "expected_addresses.txt").read_text().split()]


@pytest.fixture(scope="session")
def sample_segments():
    """``(file offset, size, vaddr)`` of the sample binary's executable segments."""
    return [(s.offset, s.size, s.vaddr) for s in ElfInfo(SAMPLE / "sample").segments if s.executable]


@pytest.fixture
def sample_image(sample_segments):
    image = libipt.Image("sample")
    for offset, size, vaddr in sample_segments:
        image.add_file(str(SAMPLE / "sample"), offset, size, vaddr)
    yield image
    image.close()


SAMPLE_CPU = libipt.Cpu(family=6, model=85, stepping=4)


@pytest.fixture(scope="session")
def libcalls(tmp_path_factory):
    """test_traces/src/libcalls.c built and recorded once for the whole run: (bundle, program, zlib used)."""
    return record_libcalls(tmp_path_factory.mktemp("libcalls"))
