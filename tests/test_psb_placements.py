"""The two PSB placements native LLDB (lldb-22) mis-decodes, made by test_traces/psb_cases.py from a real recording.

Here they decode exactly, in one pass and cut at every PSB; when lldb-22 is
installed, it is shown to mis-decode them (a spurious end of stream at a PSB
before a branch, a doubled syscall before a re-enable followed by a PSB),
while the control case decodes right.
"""

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.scenario_decoding import addresses, check_pieces_match_single_pass, open_bundle
from support.trace_scripts import psb_cases, scenarios

from lldb_trace import libipt
from lldb_trace.capture.ptrace_recorder.recording import RecordOptions
from lldb_trace.decode import ModuleBytes
from lldb_trace.decode.parallel import psb_offsets
from lldb_trace.libipt import packets as pkt
from lldb_trace.x86.instructions import Classifier, Transfer

NATIVE = shutil.which("lldb-22")

BRANCH_KINDS = {"conditional", "return", "indirect-call", "indirect-jump"}


@pytest.mark.parametrize(
    "name",
    [
        "before-branch",
        "after-reenable",
        "control",
    ],
)
def test_psb_cases_decode_in_pieces_like_one_pass(psb_case, name):
    opened = psb_case(name)
    [tid] = opened.tids
    whole = check_pieces_match_single_pass(opened, tid)
    assert addresses(whole, opened.trace.expander) == opened.expected(tid)


@pytest.mark.parametrize("name", psb_cases.CASES)
def test_psb_cases_decode_exactly_in_one_pass_and_cut_at_every_psb(psb_case, name):
    opened = psb_case(name)
    [tid] = opened.tids
    expected = opened.expected(tid)
    trace = opened.trace.trace_bytes(tid)
    assert len(psb_offsets(trace)) == len(opened.psbs) + 1  # the first PSB, and every forced one
    if name == "before-branch":
        assert {psb["kind"] for psb in opened.psbs} == BRANCH_KINDS
    elif name == "after-reenable":
        assert opened.psbs and {psb["kind"] for psb in opened.psbs} == {"after-reenable"}
    decoded = opened.trace.decoded(tid)
    assert addresses(decoded, opened.trace.expander) == expected and decoded.error_count == 0
    cut = opened.pieces(tid, len(trace))
    assert len(cut.parts) == len(opened.psbs) + 1
    if name != "control":  # see PIECE_OVERRUN_BUG
        assert addresses(cut, opened.trace.expander) == expected and cut.error_count == 0


NATIVE_LINE = re.compile(r"^\s+\d+: (?:(0x[0-9a-f]+)\s|\(error\) (.*)$)")


def native_items(bundle_json, count):
    """Items of native lldb-22's ``thread trace dump instructions`` (no plugin): ints, or ``"error: ..."``."""
    command = [
        NATIVE, "-x", "-b",
        "-o", f'trace load "{bundle_json}"',
        "-o", f"thread trace dump instructions -f -c {count}",
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=Path(bundle_json).parent)
    assert proc.returncode == 0 and "error:" not in proc.stderr, proc.stderr
    items = []
    for line in proc.stdout.splitlines():
        match = NATIVE_LINE.match(line)
        if match:
            items.append(int(match.group(1), 16) if match.group(1) else f"error: {match.group(2)}")
    assert items, proc.stdout[:2000]
    return items


def doubled_positions(items, truth):
    """Where ``items`` repeats an instruction that ``truth`` has once (positions in ``truth``).

    Fails unless ``items`` is exactly ``truth`` with such repeats added.
    """
    doubled, i = [], 0
    for j, item in enumerate(items):
        if i < len(truth) and item == truth[i]:
            i += 1
        elif i and item == truth[i - 1]:
            doubled.append(i)
        else:
            pytest.fail(f"native item {j} ({item}) is neither truth[{i}] nor a repeat of truth[{i - 1}]")
    assert i == len(truth), f"native stopped after {i} of {len(truth)} instructions"
    return doubled


needs_native = pytest.mark.skipif(NATIVE is None, reason="Debian's lldb-22 (native intel-pt) is not installed")


@needs_native
def test_native_lldb_reports_a_spurious_end_of_stream_at_a_psb_before_a_branch(psb_case):
    opened = psb_case("before-branch")
    [tid] = opened.tids
    truth = opened.expected(tid)
    items = native_items(opened.folder / "trace.json", len(truth) + 1000)
    at_psb = {truth[psb["index"]]: psb for psb in opened.psbs}  # branch address -> the PSB in front of it
    errors = [item for item in items if isinstance(item, str)]
    assert errors, "native LLDB decoded a PSB before a branch without error"
    spurious = re.compile(r"error: reached end of trace stream: (0x[0-9a-f]+)$")
    hit = set()
    for error in errors:
        match = spurious.match(error)
        assert match, error
        address = int(match.group(1), 16)
        assert address in at_psb, f"{error}: not at a forced PSB"
        hit.add(at_psb[address]["kind"])
    assert hit == BRANCH_KINDS  # every kind of branch triggers it
    first = items.index(errors[0])
    # Exact up to the first error, which stands right where a PSB precedes a branch.
    assert items[:first] == truth[:first]
    assert any(psb["index"] == first and psb["kind"] in BRANCH_KINDS for psb in opened.psbs)
    assert [item for item in items if isinstance(item, int)] != truth
    # Ours: exact, in one pass and cut at every PSB.
    assert addresses(opened.trace.decoded(tid), opened.trace.expander) == truth
    assert addresses(opened.pieces(tid, len(opened.trace.trace_bytes(tid))), opened.trace.expander) == truth


@needs_native
def test_native_lldb_doubles_the_syscall_before_a_reenable_followed_by_a_psb(psb_case):
    opened = psb_case("after-reenable")
    [tid] = opened.tids
    truth = opened.expected(tid)
    items = native_items(opened.folder / "trace.json", len(truth) + 1000)
    assert not [item for item in items if isinstance(item, str)]
    doubled = doubled_positions(items, truth)
    assert doubled == [psb["index"] for psb in opened.psbs]  # one repeat at each PSB after a re-enable
    classify = Classifier(ModuleBytes(opened.trace.process.modules).read)
    assert all(classify[truth[index - 1]].transfer == Transfer.FAR for index in doubled)  # the syscall that disabled
    assert addresses(opened.trace.decoded(tid), opened.trace.expander) == truth
    assert addresses(opened.pieces(tid, len(opened.trace.trace_bytes(tid))), opened.trace.expander) == truth


@needs_native
def test_native_lldb_decodes_the_control_case_exactly(psb_case):
    """PSBs before plain instructions away from any disable: native LLDB is right, so the cases above are
    about where the PSB is, not about the replayed streams."""
    opened = psb_case("control")
    [tid] = opened.tids
    truth = opened.expected(tid)
    assert native_items(opened.folder / "trace.json", len(truth) + 1000) == truth


def reenable_psbs(trace):
    """How many PSBs directly follow a re-enable: only MODE/TSC packets between the TIP.PGE and the PSB."""
    count, after_enable = 0, False
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        decoder.sync_forward()
        for packet in decoder:
            if isinstance(packet, pkt.TipPge):
                after_enable = True
            elif isinstance(packet, pkt.Psb):
                count += after_enable
                after_enable = False
            elif isinstance(packet, pkt.Tnt8 | pkt.Tnt64 | pkt.Tip | pkt.Fup | pkt.TipPgd | pkt.Ovf):
                after_enable = False
    return count


@pytest.fixture(scope="session")
def small_psb_period(tmp_path_factory):
    """basic.c recorded by the recorder itself with a small psb_period that puts a PSB right after a
    re-enable (160 does with this machine's libc; others are tried if not); None if none does."""
    base = scenarios.BY_NAME["basic"]
    for period in (160, 96, 128, 192, 224, 256):
        recipe = dataclasses.replace(base, name=f"basic-psb-{period}", options=RecordOptions(psb_period=period))
        path = scenarios.make(recipe, tmp_path_factory.mktemp(recipe.name) / recipe.name)
        opened = open_bundle(path.parent)
        if reenable_psbs(opened.trace.trace_bytes(opened.tids[0])):
            return opened
        opened.image.close()
    return None


def test_recorder_with_a_small_psb_period_decodes_exactly(small_psb_period):
    opened = small_psb_period
    if opened is None:
        pytest.skip("no small psb_period puts a PSB right after a re-enable with this machine's libc")
    [tid] = opened.tids
    truth = opened.expected(tid)
    assert addresses(opened.trace.decoded(tid), opened.trace.expander) == truth
    check_pieces_match_single_pass(opened, tid)


@needs_native
def test_native_lldb_doubles_an_instruction_in_the_recorders_own_stream(small_psb_period):
    opened = small_psb_period
    if opened is None:
        pytest.skip("no small psb_period puts a PSB right after a re-enable with this machine's libc")
    [tid] = opened.tids
    truth = opened.expected(tid)
    items = native_items(opened.folder / "trace.json", len(truth) + 1000)
    doubled = doubled_positions(items, truth)
    assert len(doubled) == reenable_psbs(opened.trace.trace_bytes(tid)) > 0
    classify = Classifier(ModuleBytes(opened.trace.process.modules).read)
    assert all(classify[truth[index - 1]].transfer == Transfer.FAR for index in doubled)
