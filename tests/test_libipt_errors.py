"""Error codes and texts, corrupt and truncated input, lifetimes, and the missing library."""

import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.sample_trace import SAMPLE_CPU

from lldb_trace import libipt
from lldb_trace.libipt import ErrorCode

# libipt 2.0's texts for the codes users meet in gaps, as its pt_errstr source spells them.
KNOWN_TEXTS = {
    ErrorCode.OK: "OK",
    ErrorCode.NOSYNC: "decoder out of sync",
    ErrorCode.RETSTACK_EMPTY: "compressed return without call",
    ErrorCode.NO_ENABLE: "expected tracing enabled event",
    ErrorCode.EOS: "reached end of trace stream",
    ErrorCode.NOMAP: "no memory mapped at this address",
    ErrorCode.BAD_INSN: "unknown instruction",
    ErrorCode.NO_TIME: "no timing information",
    ErrorCode.OVERFLOW: "overflow",
    ErrorCode.BAD_CPU: "unknown cpu",
}


@pytest.mark.parametrize("code, text", KNOWN_TEXTS.items())
def test_errstr_texts(code, text):
    assert libipt.errstr(code) == text
    assert libipt.errstr(-code) == text


def test_every_code_has_a_distinct_text():
    texts = [libipt.errstr(code) for code in ErrorCode]
    assert len(set(texts)) == len(texts)


def test_error_carries_code_status_and_text():
    error = libipt.LibiptError(-ErrorCode.NOMAP, "pt_blk_next")
    assert error.status == -13 and error.code == ErrorCode.NOMAP
    assert str(error) == "pt_blk_next: no memory mapped at this address (libipt error -13)"
    assert isinstance(error, libipt.LibiptError)
    assert libipt.check(3) == 3
    with pytest.raises(libipt.LibiptError):
        libipt.check(-ErrorCode.BAD_OPC)


def test_empty_trace_ends_at_once():
    with libipt.BlockDecoder(libipt.Config(b"")) as decoder, pytest.raises(libipt.LibiptError) as caught:
        decoder.sync_forward()
    assert caught.value.code == ErrorCode.EOS


@pytest.mark.parametrize("decoder_class", [libipt.PacketDecoder, libipt.QueryDecoder, libipt.BlockDecoder])
def test_no_psb_means_eos_on_sync(decoder_class):
    with decoder_class(libipt.Config(bytes(range(1, 200)))) as decoder, pytest.raises(libipt.LibiptError) as caught:
        decoder.sync_forward()
    assert caught.value.code == ErrorCode.EOS


def decode_everything(trace, image):
    """Run every decoder over ``trace`` to its end; return how many steps each took."""
    config = libipt.Config(trace, SAMPLE_CPU)
    steps = 0
    with libipt.PacketDecoder(config) as packets:
        try:
            packets.sync_forward()
            for _ in packets:
                steps += 1
        except libipt.LibiptError:
            pass
    for decoder_class in (libipt.BlockDecoder, libipt.InsnDecoder):
        with decoder_class(config, image) as decoder:
            for _ in range(10_000):  # a corrupt stream must still end
                try:
                    status = decoder.sync_forward()
                    while True:
                        while status & libipt.StatusFlag.EVENT_PENDING:
                            status, _ = decoder.event()
                        status, _ = decoder.next()
                        steps += 1
                except libipt.LibiptError as error:
                    if error.code == ErrorCode.EOS and error.context.endswith("sync_forward"):
                        break
            else:
                pytest.fail("decoder did not reach the end of a corrupt stream")
    return steps


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=512))
def test_random_bytes_never_crash(sample_image, data):
    decode_everything(data, sample_image)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_sample_never_crashes(sample_image, sample_trace, data):
    trace = bytearray(sample_trace)
    for _ in range(data.draw(st.integers(1, 8))):
        trace[data.draw(st.integers(0, len(trace) - 1))] = data.draw(st.integers(0, 255))
    decode_everything(bytes(trace), sample_image)


@pytest.mark.parametrize("cut", range(1, 41))
def test_every_truncation_of_the_sample(sample_image, sample_trace, cut):
    decode_everything(sample_trace[:cut], sample_image)


def test_many_psbs_of_noise_decode_to_errors(sample_image):
    rng = random.Random(7)
    psb = bytes.fromhex("0282" * 8)
    trace = b"".join(psb + rng.randbytes(rng.randrange(1, 64)) for _ in range(200))
    assert decode_everything(trace, sample_image) >= 0


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leak_over_ten_thousand_lifetimes(sample_trace, sample_segments):
    from support.sample_trace import SAMPLE

    path = str(SAMPLE / "sample")

    def one_lifetime():
        with libipt.Image() as image, libipt.SectionCache() as cache:
            for offset, size, vaddr in sample_segments:
                image.add_cached(cache, cache.add_file(path, offset, size, vaddr))
            config = libipt.Config(sample_trace, SAMPLE_CPU)
            with libipt.BlockDecoder(config, image) as blocks, libipt.QueryDecoder(config) as query:
                blocks.sync_forward()
                query.sync_forward()
            with libipt.InsnDecoder(config, image), libipt.PacketDecoder(config):
                pass
            with libipt.Encoder(libipt.Config(bytearray(64))) as encoder:
                encoder.next(libipt.packets.Psb())

    for _ in range(500):
        one_lifetime()
    before = rss_kib()
    for _ in range(10_000):
        one_lifetime()
    growth = rss_kib() - before
    # One leaked decoder is kilobytes; 10,000 of them would be tens of MiB.
    assert growth < 4096, f"RSS grew by {growth} KiB over 10,000 lifetimes"


def run_python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=60
    )


def test_missing_library_error_names_the_package():
    code = (
        "from lldb_trace import libipt\n"
        "try:\n    libipt.library_version()\n"
        "except libipt.LibiptUnavailableError as e:\n    print(e)\n"
    )
    result = run_python(code, LIBIPT_PATH="/nonexistent/libipt.so.2")
    assert result.returncode == 0, result.stderr
    message = result.stdout.strip()
    assert "\n" not in message
    assert "LIBIPT_PATH" in message and "libipt2" in message


def test_wrong_library_is_rejected():
    result = run_python(
        "from lldb_trace import libipt\ntry:\n    libipt.library_version()\n"
        "except libipt.LibiptUnavailableError as e:\n    print(e)\n",
        LIBIPT_PATH="libc.so.6",
    )
    assert "not libipt 2.x" in result.stdout


def test_libipt_path_may_name_a_directory():
    result = run_python(
        "from lldb_trace import libipt; print(libipt.library_version()[:2])",
        LIBIPT_PATH="/usr/lib/x86_64-linux-gnu",
    )
    assert result.stdout.strip() == "(2, 0)", result.stderr


def test_import_without_libipt_still_works():
    result = run_python("import lldb_trace, lldb_trace.libipt; print('ok')", LIBIPT_PATH="/nonexistent")
    assert result.stdout.strip() == "ok"
