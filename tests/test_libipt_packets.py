"""Encode -> decode round trips for every packet type, checked against the SDM's encodings."""

from dataclasses import is_dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lldb_trace import libipt
from lldb_trace.libipt import IpCompression as Ipc
from lldb_trace.libipt import packets as p


def roundtrip(packet_list):
    """Encode after a PSB and decode back (the packet decoder needs a PSB to sync)."""
    data = libipt.encode([p.Psb(), *packet_list])
    with libipt.PacketDecoder(libipt.Config(data)) as decoder:
        decoder.sync_forward()
        decoded = list(decoder)
    assert decoded[0] == p.Psb()
    return data[16:], decoded[1:]


# (packet, its bytes per the Intel SDM vol. 3C, ch. 33 packet formats)
KNOWN_ENCODINGS = [
    (p.Pad(), "00"),
    (p.Psbend(), "0223"),
    (p.Ovf(), "02f3"),
    (p.Stop(), "0283"),
    (p.Tsc(0x0102030405060708 & 0xFFFFFFFFFFFFFF), "19" + "08070605040302"),
    (p.Mtc(0x5A), "595a"),
    (p.Cbr(0x28), "02032800"),
    (p.Tma(0x1234, 0x1FF), "0273" + "3412" + "00ff01"),
    (p.ModeExec(libipt.ExecMode.BIT64), "9901"),
    (p.ModeExec(libipt.ExecMode.BIT32), "9902"),
    (p.ModeExec(libipt.ExecMode.BIT16), "9900"),
    (p.ModeTsx(intx=True, abrt=False), "9921"),
    (p.TipPgd(Ipc.SUPPRESSED, 0), "01"),
    (p.Tip(Ipc.UPDATE_16, 0x100A), "2d0a10"),
    (p.TipPge(Ipc.UPDATE_32, 0x00401000), "5100104000"),
    (p.Fup(Ipc.SEXT_48, 0x7FFFF7A05D90), "7d905da0f7ff7f"),
    (p.Tip(Ipc.UPDATE_48, 0x7FFFF7A05D90), "8d905da0f7ff7f"),
    (p.Tip(Ipc.FULL, 0xFFFFFFFF81000000), "cd00000081ffffffff"),
    # TNT-8: oldest outcome in the highest bit, then a stop bit; bit 0 is 0.
    (p.Tnt8.from_taken([True, True, False]), "1c"),
    (p.Tnt8.from_taken([False]), "04"),
]


@pytest.mark.parametrize("packet, expected_hex", KNOWN_ENCODINGS, ids=lambda v: getattr(v, "TYPE", v) and str(v))
def test_known_encoding_and_roundtrip(packet, expected_hex):
    data, decoded = roundtrip([packet])
    assert data.hex() == expected_hex
    assert decoded == [packet]
    assert decoded[0].size == len(data)


def test_psb_is_sixteen_bytes_of_02_82():
    assert libipt.encode([p.Psb()]) == bytes.fromhex("0282" * 8)


@pytest.mark.parametrize(
    "ipc, size",
    [(Ipc.SUPPRESSED, 1), (Ipc.UPDATE_16, 3), (Ipc.UPDATE_32, 5), (Ipc.SEXT_48, 7), (Ipc.UPDATE_48, 7), (Ipc.FULL, 9)],
)
@pytest.mark.parametrize("kind", [p.Tip, p.TipPge, p.TipPgd, p.Fup])
def test_ip_packets_every_compression(kind, ipc, size):
    ip = {Ipc.SUPPRESSED: 0, Ipc.UPDATE_16: 0xBEEF, Ipc.UPDATE_32: 0xDEADBEEF}.get(ipc, 0x7FFF_DEAD_BEEF)
    data, decoded = roundtrip([kind(ipc, ip)])
    assert len(data) == size
    assert decoded == [kind(ipc, ip)]


@given(st.lists(st.booleans(), min_size=1, max_size=6))
def test_tnt8_carries_one_to_six_branches(outcomes):
    data, decoded = roundtrip([p.Tnt8.from_taken(outcomes)])
    assert len(data) == 1
    assert decoded[0].taken() == outcomes


@given(st.lists(st.booleans(), min_size=1, max_size=47))
def test_tnt64_carries_up_to_47_branches(outcomes):
    data, decoded = roundtrip([p.Tnt64.from_taken(outcomes)])
    assert len(data) == 8
    assert decoded[0].taken() == outcomes


@given(st.integers(0, (1 << 56) - 1))
def test_tsc_roundtrip(tsc):
    assert roundtrip([p.Tsc(tsc)])[1] == [p.Tsc(tsc)]


@given(st.integers(0, 255))
def test_mtc_roundtrip(ctc):
    assert roundtrip([p.Mtc(ctc)])[1] == [p.Mtc(ctc)]


@given(st.integers(0, (1 << 60) - 1))
def test_cyc_roundtrip(value):
    data, decoded = roundtrip([p.Cyc(value)])
    assert decoded == [p.Cyc(value)]
    # 5 bits in the header byte, then 7 bits per extension byte.
    assert len(data) == 1 + max(0, (value.bit_length() - 5 + 6) // 7)


@given(st.integers(0, 0xFFFF), st.integers(0, 0x1FF))
def test_tma_roundtrip(ctc, fc):
    assert roundtrip([p.Tma(ctc, fc)])[1] == [p.Tma(ctc, fc)]


@given(st.integers(0, 255))
def test_cbr_roundtrip(ratio):
    assert roundtrip([p.Cbr(ratio)])[1] == [p.Cbr(ratio)]


OTHER_PACKETS = [
    p.Pip(cr3=0x1234000, nr=True),
    p.Pip(cr3=0xFFFFFFFFFFE0, nr=False),
    p.Vmcs(base=0x12345000),
    p.Mnt(payload=0x0123456789ABCDEF),
    p.Exstop(ip=True),
    p.Exstop(ip=False),
    p.Mwait(hints=0x21, ext=1),
    p.Pwre(state=3, sub_state=2, hw=True),
    p.Pwrx(last=1, deepest=6, interrupt=True, store=False, autonomous=True),
    p.Ptw(payload=0xCAFEBABE, plc=0, ip=False),
    p.Ptw(payload=0x1122334455667788, plc=1, ip=True),
]


@pytest.mark.parametrize("packet", OTHER_PACKETS, ids=str)
def test_remaining_packet_types_roundtrip(packet):
    assert roundtrip([packet])[1] == [packet]


def test_every_packet_kind_is_round_tripped():
    """Each class the layout table makes is encoded and decoded back by libipt in a test of this file."""
    made = {kind for kind in vars(p).values() if isinstance(kind, type) and is_dataclass(kind)} - {p.Unknown}
    tried = {type(packet) for packet, _hex in KNOWN_ENCODINGS} | {type(packet) for packet in OTHER_PACKETS}
    assert made - tried == {p.Psb, p.Tnt64, p.Cyc}  # each with a test of its own above
    assert len(made) == 26


def test_stream_in_the_projects_scheme_decodes_in_order():
    """The scheme the recorder emits: PSB+, enable, TNTs, TIPs, periodic PSB+FUP, disable."""
    stream = [
        p.Tsc(100),
        p.Cbr(40),
        p.Psbend(),
        p.ModeExec(libipt.ExecMode.BIT64),
        p.TipPge(Ipc.SEXT_48, 0x401000),
        p.Tnt8.from_taken([True, False, True, True, False, True]),
        p.Tnt64.from_taken([True] * 47),
        p.Tip(Ipc.UPDATE_16, 0x2000),
        p.Mtc(3),
        p.Cyc(17),
        p.Psb(),
        p.Tsc(200),
        p.ModeExec(libipt.ExecMode.BIT64),
        p.Fup(Ipc.SEXT_48, 0x402000),
        p.Psbend(),
        p.Ovf(),
        p.Fup(Ipc.SEXT_48, 0x403000),
        p.Pad(),
        p.TipPgd(Ipc.SUPPRESSED, 0),
    ]
    assert roundtrip(stream)[1] == stream


def test_encoder_reports_a_full_buffer():
    with libipt.Encoder(libipt.Config(bytearray(20))) as encoder:
        assert encoder.next(p.Psb()) == 16
        with pytest.raises(libipt.LibiptError) as caught:
            encoder.next(p.Psb())
        assert caught.value.code == libipt.ErrorCode.EOS
        assert encoder.offset == 16
        encoder.sync_set(0)
        assert encoder.offset == 0
