"""Reading a circular AUX buffer in snapshot mode: the oldest byte, from the head the kernel reports."""

import pytest

from lldb_trace.capture.intel_pt.aux_snapshot import snapshot_bytes, snapshot_head


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
    assert snapshot_bytes(ring, written) == stream[max(0, written - size) :]


@pytest.mark.parametrize("size", [8, 4096])
def test_snapshot_bytes_at_exact_multiples_of_the_size(size):
    ring = bytes(range(1, size + 1)) if size < 256 else stream_of(size)
    for laps in (1, 2, 3, 1000):
        assert snapshot_bytes(ring, laps * size) == ring  # the oldest byte is at offset 0
    assert snapshot_bytes(ring, 0) == b""
    assert snapshot_bytes(ring, size - 1) == ring[: size - 1]


@pytest.mark.parametrize("head", [2**64 - 1, 2**64 - 4096, 2**63 + 3, 2**32 + 5, 2**64 + 7])
def test_snapshot_bytes_with_huge_heads(head):
    size = 4096
    expected = stream_of(size, seed=head % 251)
    start = head % size
    ring = bytearray(size)
    for i, byte in enumerate(expected):  # expected[0] is the oldest byte, stored at head % size
        ring[(start + i) % size] = byte
    assert snapshot_bytes(bytes(ring), head) == expected


def test_snapshot_bytes_accepts_buffers_and_views():
    ring = bytearray(b"efgabcd")
    assert snapshot_bytes(ring, 10) == b"abcdefg"
    assert snapshot_bytes(memoryview(bytes(ring)), 10) == b"abcdefg"
    assert snapshot_bytes(b"", 5) == b""
    with pytest.raises(ValueError, match="negative"):
        snapshot_bytes(ring, -1)


@pytest.mark.parametrize("written", [0, 1, 100, 4095, 4096, 4097, 8191, 8192, 10000, 40000])
def test_snapshot_head_recovers_in_buffer_offsets(written):
    """The Intel PT driver reports a snapshot buffer's head as an offset inside it."""
    size = 4096
    stream = stream_of(written, seed=3)
    ring = write_ring(size, stream)
    raw = written % size
    head = snapshot_head(ring, raw)
    assert snapshot_bytes(ring, head) == stream[max(0, written - size) :]


def test_snapshot_head_keeps_running_counts():
    ring = stream_of(16)
    assert snapshot_head(ring, 16) == 16
    assert snapshot_head(ring, 2**64 - 1) == 2**64 - 1
    assert snapshot_head(b"", 0) == 0
    with pytest.raises(ValueError, match="negative"):
        snapshot_head(ring, -1)


def test_snapshot_head_zero_tail_loses_only_pad_bytes():
    """Wrapped, but the bytes after the head are all zero: only those zeros (PAD packets) are dropped."""
    size = 64
    stream = stream_of(30) + bytes(34) + stream_of(30, seed=9)  # 94 bytes; the ring's tail holds the zeros
    ring = write_ring(size, stream)
    raw = len(stream) % size
    assert ring[raw:] == bytes(size - raw)
    got = snapshot_bytes(ring, snapshot_head(ring, raw))
    full = stream[-size:]
    assert got == full[size - raw :]
    assert full[: size - raw] == bytes(size - raw)
