"""Shared fixtures: the bundled sample trace and its hand-checked ground truth."""

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from lldb_trace import libipt

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
    with open(SAMPLE / "sample", "rb") as f:
        return [
            (seg["p_offset"], seg["p_filesz"], seg["p_vaddr"])
            for seg in ELFFile(f).iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1
        ]


@pytest.fixture
def sample_image(sample_segments):
    image = libipt.Image("sample")
    for offset, size, vaddr in sample_segments:
        image.add_file(str(SAMPLE / "sample"), offset, size, vaddr)
    yield image
    image.close()


SAMPLE_CPU = libipt.Cpu(family=6, model=85, stepping=4)
