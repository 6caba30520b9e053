"""The query, block and instruction decoders on the bundled sample trace.

The sample's ground truth (expected_addresses.txt) was worked out by hand from
``objdump -d`` of the sample binary; see test_traces/sample/make_sample.py.
"""

import dataclasses

import pytest
from support.sample_trace import SAMPLE, SAMPLE_CPU

from lldb_trace import libipt
from lldb_trace.libipt import EventType, StatusFlag


def drain(decoder):
    """Every item of a flow decoder: events, instructions/blocks, and error codes (resyncing)."""
    items = []
    try:
        status = decoder.sync_forward()
    except libipt.LibiptError as error:
        return [error.code]
    while True:
        while status & StatusFlag.EVENT_PENDING:
            status, event = decoder.event()
            items.append(event)
        try:
            status, item = decoder.next()
            items.append(item)
        except libipt.LibiptError as error:
            if error.partial is not None:
                items.append(error.partial)
            items.append(error.code)
            if error.code == libipt.ErrorCode.EOS:
                return items
            try:
                status = decoder.sync_forward()
            except libipt.LibiptError as sync_error:
                items.append(sync_error.code)
                return items


def insn_addresses(items):
    return [item.ip for item in items if isinstance(item, libipt.Insn)]


def test_instruction_decoder_reproduces_ground_truth(sample_trace, sample_image, sample_expected):
    with libipt.InsnDecoder(libipt.Config(sample_trace, SAMPLE_CPU), sample_image) as decoder:
        items = drain(decoder)
    assert insn_addresses(items) == sample_expected
    assert items[-1] == libipt.ErrorCode.EOS
    loop_branch = [i for i in items if isinstance(i, libipt.Insn) and i.ip == 0x401019]
    assert all(i.iclass == libipt.InsnClass.COND_JUMP and i.raw == b"\x75\xfa" for i in loop_branch)


def test_block_decoder_agrees_with_ground_truth(sample_trace, sample_image, sample_expected):
    with libipt.BlockDecoder(libipt.Config(sample_trace, SAMPLE_CPU), sample_image) as decoder:
        items = drain(decoder)
    blocks = [i for i in items if isinstance(i, libipt.Block)]
    assert sum(b.ninsn for b in blocks) == len(sample_expected)
    # Each block starts and ends on ground-truth instructions, in order.
    position = 0
    for block in blocks:
        assert sample_expected[position] == block.ip
        position += block.ninsn
        assert sample_expected[position - 1] == block.end_ip
    assert blocks[-1].iclass == libipt.InsnClass.FAR_CALL  # the exit syscall
    assert not any(b.truncated or b.speculative for b in blocks)


def test_events_of_the_sample(sample_trace, sample_image):
    with libipt.BlockDecoder(libipt.Config(sample_trace, SAMPLE_CPU), sample_image) as decoder:
        events = [i for i in drain(decoder) if isinstance(i, libipt.Event)]
    assert [e.type for e in events] == [EventType.ENABLED, EventType.EXEC_MODE, EventType.DISABLED]
    enabled, exec_mode, disabled = events
    assert enabled.ip == 0x401000 and not enabled.resumed
    assert exec_mode.mode == libipt.ExecMode.BIT64
    assert disabled.ip_suppressed and disabled.ip is None
    assert all(e.tsc == 1_000_000 for e in events)


def test_decoder_time(sample_trace, sample_image):
    with libipt.BlockDecoder(libipt.Config(sample_trace, SAMPLE_CPU), sample_image) as decoder:
        decoder.sync_forward()
        assert decoder.time() == (1_000_000, 0, 0)
        with pytest.raises(libipt.LibiptError) as caught:
            decoder.core_bus_ratio()
        assert caught.value.code == libipt.ErrorCode.NO_CBR
        assert decoder.asid() == (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
        assert decoder.sync_offset == 0


def test_query_decoder_answers_the_branches(sample_trace):
    with libipt.QueryDecoder(libipt.Config(sample_trace, SAMPLE_CPU)) as decoder:
        status, _ip = decoder.sync_forward()
        # The sample's PSB+ carries no FUP: tracing is enabled by the TIP.PGE after it.
        assert status & StatusFlag.EVENT_PENDING and status & StatusFlag.IP_SUPPRESSED
        pending = []
        while status & StatusFlag.EVENT_PENDING:
            status, event = decoder.event()
            pending.append(event)
        assert [e.type for e in pending] == [EventType.ENABLED, EventType.EXEC_MODE]
        assert pending[0].ip == 0x401000
        assert decoder.time()[0] == 1_000_000
        assert [decoder.cond_branch()[1] for _ in range(3)] == [True, True, False]
        status, target = decoder.indirect_branch()
        assert target == 0x40100A
        status, event = decoder.event()
        assert event.type == EventType.DISABLED
        with pytest.raises(libipt.LibiptError) as caught:
            decoder.cond_branch()
        assert caught.value.code == libipt.ErrorCode.EOS


def test_section_cache_image(sample_trace, sample_segments, sample_expected):
    with libipt.SectionCache("cache") as cache, libipt.Image("cached") as image:
        assert cache.name == "cache" and image.name == "cached"
        cache.set_limit(1 << 20)
        for offset, size, vaddr in sample_segments:
            isid = cache.add_file(str(SAMPLE / "sample"), offset, size, vaddr)
            assert isid > 0
            image.add_cached(cache, isid)
        assert cache.read(isid, 0x401000, 5) == bytes.fromhex("bf03000000")
        with libipt.InsnDecoder(libipt.Config(sample_trace, SAMPLE_CPU), image) as decoder:
            assert insn_addresses(drain(decoder)) == sample_expected


def test_read_memory_callback_image(sample_trace, sample_segments, sample_expected):
    binary = (SAMPLE / "sample").read_bytes()
    offset, size, vaddr = sample_segments[0]
    reads = []

    def read_memory(ip, count):
        reads.append(ip)
        if not vaddr <= ip < vaddr + size:
            return b""
        start = offset + ip - vaddr
        return binary[start : min(start + count, offset + size)]

    with libipt.Image("callback") as image:
        image.set_callback(read_memory)
        with libipt.InsnDecoder(libipt.Config(sample_trace, SAMPLE_CPU), image) as decoder:
            assert insn_addresses(drain(decoder)) == sample_expected
    assert 0x401000 in reads


def test_raising_callback_becomes_a_nomap_gap(sample_trace):
    def read_memory(ip, count):
        raise RuntimeError("boom")

    with libipt.Image("broken") as image:
        image.set_callback(read_memory)
        with libipt.BlockDecoder(libipt.Config(sample_trace, SAMPLE_CPU), image) as decoder:
            items = drain(decoder)
    assert libipt.ErrorCode.NOMAP in items
    assert not [i for i in items if isinstance(i, libipt.Block)]


def test_missing_image_gives_nomap(sample_trace):
    with libipt.BlockDecoder(libipt.Config(sample_trace, SAMPLE_CPU)) as decoder:
        items = drain(decoder)
    assert items.count(libipt.ErrorCode.NOMAP) == 1
    assert items[-1] == libipt.ErrorCode.EOS


def test_image_remove_and_copy(sample_segments):
    path = str(SAMPLE / "sample")
    with libipt.Image("a") as first, libipt.Image("b") as second:
        for offset, size, vaddr in sample_segments:
            first.add_file(path, offset, size, vaddr, asid=libipt.make_asid(cr3=0x1000))
        assert second.copy_from(first) == 0
        assert second.remove_by_asid(libipt.make_asid(cr3=0x1000)) == len(sample_segments)
        assert first.remove_by_filename(path, libipt.make_asid(cr3=0x1000)) == len(sample_segments)


def test_add_file_that_does_not_exist_raises():
    with libipt.Image() as image, pytest.raises(libipt.LibiptError) as caught:
        image.add_file("/nonexistent/file", 0, 16, 0x1000)
    assert "pt_image_add_file /nonexistent/file" in str(caught.value)


def test_errata_for_skylake_server():
    assert libipt.cpu_errata(SAMPLE_CPU) == 0x229
    assert libipt.errata_names(0x229) == ["bdm70", "skd022", "skl014", "skz84"]
    assert libipt.Config(b"\0", SAMPLE_CPU).errata == 0x229
    assert libipt.Config(b"\0").errata == 0


def test_a_model_newer_than_libipt_decodes_with_no_errata(sample_trace, sample_image, sample_expected):
    """libipt answers pte_bad_cpu for family 6 models it does not list (Meteor Lake's 170, Raptor Lake's 183):
    such a trace was refused ("pt_cpu_errata: unknown cpu"), as native lldb-22 refuses it."""
    newer = dataclasses.replace(SAMPLE_CPU, model=170)
    assert libipt.cpu_errata(newer) == 0 and libipt.Config(b"\0", newer).errata == 0
    with libipt.InsnDecoder(libipt.Config(sample_trace, newer), sample_image) as decoder:
        assert insn_addresses(drain(decoder)) == sample_expected


def test_closed_objects_refuse_use(sample_trace):
    decoder = libipt.BlockDecoder(libipt.Config(sample_trace))
    decoder.close()
    decoder.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        decoder.sync_forward()
