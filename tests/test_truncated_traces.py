"""Trace files cut short, at every byte of real recorded traces.

A cut inside a packet is a truncated file: decoding ends in a gap that names
the cut packet, and nothing is invented past the last complete packet.  A cut
at a packet boundary cannot be told from a snapshot's end and stays as it is.
The reference for "inside a packet" is libipt's own packet listing of the
whole trace, the reference for the instructions is the whole trace's decode
(which test_decoder.py checks against the single-stepped ground truth), and
where the thread is shown must be an address the ground truth says it ran.
The parallel piece decoder must give exactly what one pass gives.
"""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import TRACES
from support.trace_scripts import scenarios

import lldb_trace.decode
from lldb_trace import cli, libipt
from lldb_trace.bundle import BundleError
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.decode import decode_thread_trace, process_image
from lldb_trace.decode.cursor import walk
from lldb_trace.decode.decoded_thread import Gap
from lldb_trace.decode.parallel import _PieceDecoder, psb_offsets
from lldb_trace.decode.truncation import find_cut, find_file_cut, packet_header, packet_name
from lldb_trace.libipt import ExecMode
from lldb_trace.libipt import IpCompression as Ipc
from lldb_trace.libipt import packets as p
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

SWEPT = ["basic", "crash", "timestamps", "overflow", "snapshot"]


@dataclass
class Real:
    """A scenario's first thread: its trace, the whole trace's decode, and libipt's packet listing of it."""

    folder: Path
    trace: ProcessTrace
    image: libipt.Image
    data: bytes = b""
    items: list = field(default_factory=list)  # the whole decode, comparable: address or ("gap", code)
    reached: set = field(default_factory=set)  # every address the thread ran (single-stepped) or stopped at
    packets: list = field(default_factory=list)  # (offset, PacketType, size) of every packet

    def packet_cut_by(self, cut):
        """The whole trace's packet that a cut at byte ``cut`` falls inside, or None at a boundary."""
        for offset, kind, size in self.packets:
            if offset < cut < offset + size:
                return offset, kind, size
        return None


def comparable(decoded, expander):
    return [("gap", v.code) if isinstance(v, Gap) else v for _, v in walk(decoded, 0, True, expander)]


def packet_listing(data):
    found = []
    with libipt.PacketDecoder(libipt.Config(data)) as decoder:
        decoder.sync_forward()
        while True:
            offset = decoder.offset
            try:
                packet = decoder.next()
            except libipt.LibiptError:
                return found
            found.append((offset, packet.TYPE, packet.size))


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """``real(name)``: the committed scenario (recorded again here if this machine's libraries differ)."""
    opened = {}

    def get(name):
        if name not in opened:
            folder = TRACES / name
            if not scenarios.modules_match(folder / "trace.json"):
                fresh = tmp_path_factory.mktemp(name) / name
                folder = scenarios.make(scenarios.BY_NAME[name], fresh).parent
            bundle = load_trace(folder)
            trace = ProcessTrace(bundle, bundle.processes[0], workers=1)
            each = Real(folder, trace, process_image(bundle.processes[0]))
            each.data = trace.trace_bytes(trace.tids[0])
            whole = decode_thread_trace(each.data, trace.cpu, each.image, trace.expander)
            each.items = comparable(whole, trace.expander)
            truth = GroundTruth.read(folder / "ground_truth" / f"{trace.tids[0]}.txt")
            each.reached = set(truth.addresses) | {whole.end_ip}
            each.packets = packet_listing(each.data)
            opened[name] = each
        return opened[name]

    yield get
    for each in opened.values():
        each.image.close()


def decode(real, data, pieces=1):
    """One pass, or pieces decoded one after the other in this process (what forked workers would do)."""
    if pieces == 1:
        return decode_thread_trace(data, real.trace.cpu, real.image, real.trace.expander)
    with (
        mock.patch.object(lldb_trace.decode, "PIECE_MIN_BYTES", 1),
        mock.patch.object(_PieceDecoder, "fork", lambda _self, _job: None),
    ):
        return decode_thread_trace(data, real.trace.cpu, real.image, real.trace.expander, pieces)


def check_cut(real, cut, decoded):
    """What a trace cut at byte ``cut`` must decode to (see the module's docstring)."""
    items = comparable(decoded, real.trace.expander)
    inside = real.packet_cut_by(cut)
    if inside is None:
        assert decoded.truncation is None, cut
        assert not any("truncated" in gap.text for gap in decoded.gaps), cut
        return
    offset, kind, size = inside
    if offset == real.packets[0][0]:  # inside the first PSB: none is left, and the loader refuses such a file
        assert decoded.item_count == decoded.event_count == 0
        return
    last = decoded.gaps[-1] if decoded.gaps else None
    assert last is not None and last.index == decoded.item_count - 1, cut  # the very last item
    what = f"a {packet_name(kind)} packet at offset {offset:#x} ({cut - offset} of its {size} bytes)"
    if real.data[offset] == 0x02 and cut - offset == 1:  # an extended opcode: its second byte says which packet
        what = f"a packet at offset {offset:#x} (1 byte)"
    expected = f"it ends inside {what}"
    assert expected in last.text, (cut, last.text)
    assert decoded.truncation.offset == offset == last.offset
    assert items[:-1] == real.items[: len(items) - 1], cut  # nothing invented past the last complete packet
    assert decoded.end_ip is None or decoded.end_ip in real.reached, cut


def test_every_cut_of_the_crash_trace(real):
    crash = real("crash")
    inside = 0
    for cut in range(1, len(crash.data) + 1):
        decoded = decode(crash, crash.data[:cut])
        check_cut(crash, cut, decoded)
        inside += crash.packet_cut_by(cut) is not None
    assert inside > len(crash.data) // 2  # most bytes are inside multi-byte packets


def cuts_near_psbs(real, before=4, after=40):
    """Every cut from a little before each PSB (and overflow) to well past it, and the last bytes of the trace."""
    marks = [offset for offset, kind, _ in real.packets if kind in (libipt.PacketType.PSB, libipt.PacketType.OVF)]
    cuts = {cut for mark in marks for cut in range(mark - before, mark + after)}
    cuts |= set(range(len(real.data) - after, len(real.data) + 1))
    return sorted(cut for cut in cuts if 0 < cut <= len(real.data))


@pytest.mark.parametrize("name", SWEPT)
def test_cuts_around_every_psb_in_one_pass_and_in_pieces(real, name):
    """Around PSBs the piece decoder cuts the trace too: only its last piece may end in the truncation gap."""
    scenario = real(name)
    for cut in cuts_near_psbs(scenario):
        data = scenario.data[:cut]
        one = decode(scenario, data)
        check_cut(scenario, cut, one)
        three = decode(scenario, data, pieces=3)
        assert comparable(three, scenario.trace.expander) == comparable(one, scenario.trace.expander), cut
        assert (three.end_ip, three.truncation) == (one.end_ip, one.truncation), cut


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SWEPT), st.floats(0, 1))
def test_any_cut_anywhere(real, name, where):
    scenario = real(name)
    cut = max(1, round(where * len(scenario.data)))
    check_cut(scenario, cut, decode(scenario, scenario.data[:cut]))


def test_only_the_last_piece_ends_where_the_file_does(real):
    """A broken packet just before a PSB in mid-trace ends a piece inside a packet: that is no truncated file."""
    basic = real("basic")
    middle = psb_offsets(basic.data)[2]
    broken = bytes(basic.data[:middle]) + bytes([0x2D]) + bytes(basic.data[middle:])  # a TIP header, no IP bytes
    for pieces in (1, 3):
        decoded = decode(basic, broken, pieces)
        assert decoded.truncation is None and not any("truncated" in gap.text for gap in decoded.gaps)
    offset = next(offset for offset, _kind, size in reversed(basic.packets) if size > 1) + 1  # in ``broken``
    cut = decode(basic, broken[: offset + 1], pieces=3)  # the last piece's end is the file's
    assert cut.truncation.offset == offset and "truncated" in cut.gaps[-1].text


def test_forked_pieces_agree_with_one_pass(real):
    basic = real("basic")
    last_psb = psb_offsets(basic.data)[-1]
    for cut in (last_psb + 5, last_psb + 30, len(basic.data) - 2):
        data = basic.data[:cut]
        with mock.patch.object(lldb_trace.decode, "PIECE_MIN_BYTES", 1):
            forked = decode_thread_trace(data, basic.trace.cpu, basic.image, basic.trace.expander, 3)
        one = decode(basic, data)
        assert comparable(forked, basic.trace.expander) == comparable(one, basic.trace.expander)
        assert forked.truncation == one.truncation


def test_a_cut_fup_does_not_walk_the_thread_past_its_crash(real):
    """The crash trace ends FUP(faulting pc), TIP.PGD: libipt would walk on past the fault without the FUP."""
    crash = real("crash")
    fup_offset, kind, size = next(packet for packet in crash.packets if packet[1] == libipt.PacketType.FUP)
    assert kind == libipt.PacketType.FUP and size > 2
    decoded = decode(crash, crash.data[: fup_offset + 1])
    addresses = [item for item in comparable(decoded, crash.trace.expander) if isinstance(item, int)]
    assert addresses == crash.items[: len(addresses)]
    assert decoded.end_ip in crash.reached  # where the complete packets leave the thread, not past the fault
    assert "ends inside a fup packet" in decoded.gaps[-1].text


def test_a_cut_tip_keeps_the_run_that_waited_for_it(real):
    """The thread ran up to the branch whose TIP was cut: those instructions stay, as native LLDB shows them."""
    crash = real("crash")
    tips = [packet for packet in crash.packets if packet[1] == libipt.PacketType.TIP]
    offset, _kind, _size = tips[len(tips) // 2]
    whole_packet = decode(crash, crash.data[:offset])  # cut just before the TIP: at a boundary
    cut_packet = decode(crash, crash.data[: offset + 1])
    expander = crash.trace.expander
    assert comparable(cut_packet, expander)[:-1] == comparable(whole_packet, expander)
    assert cut_packet.end_ip == whole_packet.end_ip


def test_a_truncated_trace_still_loads_and_a_cut_first_psb_is_refused(real, tmp_path):
    basic = real("basic")
    folder = tmp_path / "bundle"
    shutil.copytree(basic.folder, folder)
    document = json.loads((folder / "trace.json").read_text())
    trace = folder / document["processes"][0]["threads"][0]["iptTrace"]
    trace.write_bytes(basic.data[:201])
    assert load_trace(folder).processes[0].threads[0].trace == trace
    trace.write_bytes(basic.data[:9])  # inside the first PSB: no PSB left anywhere
    with pytest.raises(BundleError, match=r"threads\[0\]\.iptTrace: .* holds no PSB packet"):
        load_trace(folder)


# -- naming the cut packet --------------------------------------------------------------------------

EVERY_KIND = [
    p.Psb(), p.Psbend(), p.Ovf(), p.Stop(), p.Pad(), p.Tsc(0x123456), p.Mtc(7), p.Cyc(5), p.Cyc(1 << 20),
    p.Cbr(40), p.Tma(0x1234, 0x1FF), p.ModeExec(ExecMode.BIT64), p.ModeTsx(intx=True, abrt=False),
    p.Tnt8.from_taken([True, False]), p.Tnt64.from_taken([True] * 30), p.Pip(cr3=0x1234000, nr=True),
    p.Vmcs(base=0x12345000), p.Mnt(payload=0x0123456789ABCDEF), p.Exstop(ip=True), p.Exstop(ip=False),
    p.Mwait(hints=0x21, ext=1), p.Pwre(state=3, sub_state=2, hw=True),
    p.Pwrx(last=1, deepest=6, interrupt=True, store=False, autonomous=True),
    p.Ptw(payload=0xCAFEBABE, plc=0, ip=False), p.Ptw(payload=0x1122334455667788, plc=1, ip=True),
    *(kind(ipc, 0x7FFF_DEAD_BEEF) for kind in (p.Tip, p.TipPge, p.TipPgd, p.Fup)
      for ipc in (Ipc.SUPPRESSED, Ipc.UPDATE_16, Ipc.UPDATE_32, Ipc.SEXT_48, Ipc.UPDATE_48, Ipc.FULL)),
]  # fmt: skip


def test_the_opcode_table_names_every_packet_as_libipt_decodes_it(real):
    streams = [libipt.encode([p.Psb(), *EVERY_KIND])] + [real(name).data for name in SWEPT]
    kinds = set()
    for data in streams:
        for offset, kind, size in packet_listing(data):
            expected = (kind, None) if kind == libipt.PacketType.CYC else (kind, size)
            assert packet_header(data[offset:]) == expected, (offset, data[offset : offset + size].hex())
            kinds.add(kind)
    assert len(kinds) >= 25


def test_every_packet_cut_short_is_found_and_named():
    data = libipt.encode([p.Psb(), p.Psbend(), *EVERY_KIND])
    for offset, kind, size in packet_listing(data)[1:]:  # a cut inside the first PSB leaves nothing to sync on
        for present in range(1, size):
            cut = find_cut(data[: offset + present])
            named = None if data[offset] == 0x02 and present == 1 else kind  # a lone extended-opcode byte
            assert (cut.offset, cut.packet, cut.present) == (offset, named, present), (kind, present)
        assert find_cut(data[: offset + size]) is None


def test_a_file_cut_is_found_from_its_tail(tmp_path):
    """find_file_cut reads only the end of the file, widening until it holds a PSB."""
    stream = libipt.encode([p.Psb(), p.Psbend(), p.Tip(Ipc.UPDATE_16, 0x1234)])
    near = tmp_path / "near.ipt"
    near.write_bytes(stream * 20000 + stream[:-1])  # 400 KB; the last PSB is a few bytes from the end
    far = tmp_path / "far.ipt"
    far.write_bytes(stream[:18] + bytes(300_000) + stream[18:-1])  # 300 KB of PAD after the only PSB
    for path in (near, far):
        assert find_file_cut(path) == find_cut(path.read_bytes()) is not None
        assert find_file_cut(path).offset == path.stat().st_size - 2
    assert find_file_cut(tmp_path / "gone.ipt") is None


def test_packets_command_says_where_the_stream_was_cut(real, tmp_path, capsys):
    basic = real("basic")
    offset, kind, size = basic.packet_cut_by(201) or basic.packet_cut_by(202)
    cut = tmp_path / "cut.ipt"
    cut.write_bytes(basic.data[: offset + 1])
    assert cli.main(["packets", str(cut)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith(f"{offset - 1:#010x}") or f"{offset:#010x}" not in out
    assert err.strip().splitlines() == [
        f"error: {cut}: the stream ends inside a {packet_name(kind)} packet at offset {offset:#x} "
        f"(1 of its {size} bytes): the file is truncated"
    ]
    whole = tmp_path / "whole.ipt"
    whole.write_bytes(basic.data[:offset])
    assert cli.main(["packets", str(whole)]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["packets", "/dev/zero"]) == 1
    assert "is a character device, not a trace file" in capsys.readouterr().err


# -- in LLDB ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["basic", "crash"])
def test_trace_dump_warns_about_a_truncated_trace(real, tmp_path, name):
    """Before decoding too: a bundle that says where its thread stopped (the crash) is not decoded by the load."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    scenario = real(name)
    folder = tmp_path / "bundle"
    shutil.copytree(scenario.folder, folder)
    document = json.loads((folder / "trace.json").read_text())
    offset, kind, size = next(packet for packet in reversed(scenario.packets) if packet[2] > 2)
    (folder / document["processes"][0]["threads"][0]["iptTrace"]).write_bytes(scenario.data[: offset + 1])
    described = f"a {packet_name(kind)} packet at offset {offset:#x} (1 of its {size} bytes)"
    session = Session(tmp_path)
    try:
        session.ok(f"trace load {folder / 'trace.json'}")
        assert f"      warning: the trace is truncated: it ends inside {described}; " in session.ok("pt dump")
        assert json.loads(session.ok("pt dump --json"))["threads"][0]["truncated"]["offset"] == offset
        last = session.ok("pt dump --instructions -c 1")
        assert f"error -7. 'the trace is truncated: it ends inside {described}" in last
        info = session.ok("pt dump")
        assert "errors: 1," in info and f"it ends inside {described}" in info
    finally:
        session.close()
