"""The decoder (lldb_trace.decode, plain Python) against single-stepped ground truth.

Every committed scenario of test_traces/ is decoded through ProcessTrace and
compared with the addresses the recorder single-stepped; committed scenarios
recorded against other shared libraries are re-recorded from their recipe
first (as in test_recorder.py).  Then: cursors walk the same items both ways
and from any index; decoding in pieces cut at PSBs equals one pass; the two
PSB placements that native LLDB (lldb-22) mis-decodes (test_traces/psb_cases.py
makes them from a real recording) decode exactly here, and, when lldb-22 is
installed, are shown to be mis-decoded by it; decoded storage stays compact.
"""

import dataclasses
import itertools
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from support import reference_decode

from lldb_trace import libipt
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.capture.ptrace_recorder.recording import RecordOptions
from lldb_trace.decode import CodeMemory, decode_part, process_image
from lldb_trace.decode.cursor import TraceCursor, walk
from lldb_trace.decode.decoded_thread import DecodedThread, Gap
from lldb_trace.decode.parallel import decode_pieces, plan_pieces, psb_offsets
from lldb_trace.libipt import ErrorCode, EventType
from lldb_trace.libipt import packets as pkt
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace
from lldb_trace.x86.instructions import Classifier, Transfer

sys.path.insert(0, str(ROOT / "test_traces"))
import percpu_scenario
import psb_cases
import scenarios

TRACES = ROOT / "test_traces"
SCENARIOS = sorted(p.parent.name for p in TRACES.glob("*/trace.json"))
EXACT = [name for name in SCENARIOS if name != "missing-module"]  # decode with no gap at all
NATIVE = shutil.which("lldb-22")


# -- scenarios ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Opened:
    """A scenario bundle opened for decoding: its ProcessTrace (one worker), an image, its ground truth."""

    folder: Path
    trace: ProcessTrace
    image: libipt.Image
    psbs: list = dataclasses.field(default_factory=list)  # psb_cases bundles: the PSBs they forced

    @property
    def tids(self):
        return self.trace.tids

    def truth(self, tid):
        if self.folder.name == "sample":  # hand-checked, no ground_truth/ folder
            addresses = [int(a, 16) for a in (self.folder / "expected_addresses.txt").read_text().split()]
            return GroundTruth(addresses=addresses, ended="exited")
        return GroundTruth.read(self.folder / "ground_truth" / f"{tid}.txt")

    def expected(self, tid):
        """The addresses a decoder must give, gaps (overflow, snapshot) taken out."""
        return [address for segment in self.truth(tid).decodable_segments() for address in segment]

    def pieces(self, tid, count):
        """``tid``'s trace decoded by decode_pieces into ``count`` pieces (see plan_pieces)."""
        trace = self.trace.trace_bytes(tid)
        return DecodedThread(decode_pieces(trace, self.trace.cpu, self.image, self.trace.expander, count))

    def single_pass(self, tid):
        return DecodedThread([decode_part(self.trace.trace_bytes(tid), self.trace.cpu, self.image)])


def open_bundle(folder):
    bundle = load_trace(folder)
    process = bundle.processes[0]
    return Opened(Path(folder), ProcessTrace(bundle, process, workers=1), process_image(process))


@pytest.fixture(scope="session")
def scenario(tmp_path_factory):
    """``scenario(name)``: the committed bundle opened, or the same recipe recorded again here."""
    opened = {}

    def get(name):
        if name not in opened:
            folder = TRACES / name
            recorded = name == "percpu" or name in scenarios.BY_NAME  # sample is hand-made: self-contained
            if recorded and not scenarios.modules_match(folder / "trace.json"):
                fresh = tmp_path_factory.mktemp(name) / name
                if name == "percpu":
                    folder = percpu_scenario.make(fresh).parent
                else:
                    folder = scenarios.make(scenarios.BY_NAME[name], fresh).parent
            opened[name] = open_bundle(folder)
        return opened[name]

    yield get
    for each in opened.values():
        each.image.close()


def addresses(decoded, expander):
    """The instruction addresses of a walk forwards (gaps left out)."""
    return [value for _, value in walk(decoded, 0, True, expander) if not isinstance(value, Gap)]


def runs(decoded, expander):
    """The instruction runs between gap items, as ``[(gap before or None, [addresses])]``."""
    found, current, gap = [], [], None
    for _, value in walk(decoded, 0, True, expander):
        if isinstance(value, Gap):
            found.append((gap, current))
            current, gap = [], value
        else:
            current.append(value)
    found.append((gap, current))
    return found


def sequence(decoded, expander):
    """``[(index, address or ("gap", code))]``: everything a walk forwards gives, comparable across decodes."""
    return [
        (index, ("gap", value.code) if isinstance(value, Gap) else value)
        for index, value in walk(decoded, 0, True, expander)
    ]


def events(decoded):
    return [(event.index, event.type) for event in decoded.events]


# -- 1. every scenario decodes to its ground truth ------------------------------------------------


@pytest.mark.parametrize("name", EXACT)
def test_every_thread_decodes_to_its_ground_truth(scenario, name):
    opened = scenario(name)
    assert opened.tids
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        expected = opened.expected(tid)
        assert addresses(decoded, opened.trace.expander) == expected, f"thread {tid}"
        lost = len(opened.truth(tid).lost)  # each overflow is one gap item, as in native LLDB
        assert decoded.error_count == lost and [gap.code for gap in decoded.gaps] == [ErrorCode.OVERFLOW] * lost
        assert decoded.instruction_count == len(expected) and decoded.item_count == len(expected) + lost


def test_overflow_is_a_gap_exactly_where_the_recipe_lost_instructions(scenario):
    opened = scenario("overflow")
    recipe = scenarios.BY_NAME["overflow"].options
    [tid] = opened.tids
    truth = opened.truth(tid)
    [(lost_start, lost_end)] = truth.lost
    # The recorder overflows right after the first packet-carrying branch from overflow_at on, and
    # resumes at the first plain instruction once overflow_lost instructions went by.
    assert recipe.overflow_at < lost_start <= recipe.overflow_at + 64
    assert recipe.overflow_lost <= lost_end - lost_start <= recipe.overflow_lost + 64
    recorded = json.loads((opened.folder / "recording.json").read_text())["instructions"][str(tid)]
    assert recorded == len(truth.addresses)

    decoded = opened.trace.decoded(tid)
    overflows = [event for event in decoded.events if event.type == EventType.OVERFLOW]
    assert [event.index for event in overflows] == [lost_start]  # before the first instruction after the loss
    assert decoded.instruction_count == recorded - (lost_end - lost_start)
    decoded_addresses = addresses(decoded, opened.trace.expander)
    around = 300
    assert decoded_addresses[lost_start - around : lost_start] == list(
        truth.addresses[lost_start - around : lost_start]
    )
    assert decoded_addresses[lost_start : lost_start + around] == list(truth.addresses[lost_end : lost_end + around])
    cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
    cursor.seek(lost_start)
    gap = cursor.item()
    assert [e.type for e in gap.events] == [EventType.OVERFLOW] and gap.gap.code == ErrorCode.OVERFLOW
    cursor.next()
    assert cursor.item().address == truth.addresses[lost_end]


def test_timestamps_are_present_and_never_go_back(scenario):
    opened = scenario("timestamps")
    recorded_seconds = json.loads((opened.folder / "recording.json").read_text())["seconds"]
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        assert decoded.has_timestamps
        cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
        stamps = [item.tsc for item in cursor.items()]
        assert len(stamps) == decoded.item_count
        assert None not in stamps
        assert all(a <= b for a, b in itertools.pairwise(stamps))
        assert stamps == [decoded.timestamp(index) for index in range(decoded.item_count)]
        assert len(set(stamps)) > 3  # time moves: a TSC at every PSB and every re-enable
        # The recorder's TSC counts CLOCK_MONOTONIC nanoseconds, within the recording's run time.
        assert 0 < stamps[-1] - stamps[0] <= recorded_seconds * 1e9


def test_scenarios_without_timing_have_no_timestamps(scenario):
    decoded = scenario("basic").trace.decoded(scenario("basic").tids[0])
    assert not decoded.has_timestamps and decoded.timestamp(0) is None


def test_snapshot_decodes_to_the_tail_of_the_ground_truth(scenario):
    opened = scenario("snapshot")
    [tid] = opened.tids
    truth = opened.truth(tid)
    assert 0 < truth.snapshot_from < len(truth.addresses)
    decoded = opened.trace.decoded(tid)
    assert addresses(decoded, opened.trace.expander) == list(truth.addresses[truth.snapshot_from :])
    assert decoded.error_count == 0
    assert EventType.ENABLED not in [event.type for event in decoded.events[:1]]  # it starts mid-run, at a PSB


def test_crash_ends_at_the_faulting_instruction(scenario):
    opened = scenario("crash")
    [tid] = opened.tids
    truth = opened.truth(tid)
    faulting = int(re.search(r" at (0x[0-9a-f]+)", truth.ended).group(1), 16)
    assert opened.trace.decoded(tid).end_ip == faulting


def test_missing_module_gaps_are_exactly_where_execution_entered_it(scenario):
    opened = scenario("missing-module")
    assert scenarios.BY_NAME["missing-module"].missing_module == "libc.so.6"
    memory = CodeMemory(opened.trace.process.modules)
    assert not any(Path(m.system_path).name == "libc.so.6" for m in opened.trace.process.modules)

    def in_missing_module(address):
        return memory.segment_at(address) is None

    [tid] = opened.tids
    truth = list(opened.truth(tid).addresses)
    decoded = opened.trace.decoded(tid)
    found = runs(decoded, opened.trace.expander)
    gaps = decoded.gaps
    assert len(found) == len(gaps) + 1 and gaps
    assert all(gap.code == ErrorCode.NOMAP for gap in gaps)

    # The same gaps as libipt's own instruction decoder, after the same instruction counts.
    reference = reference_decode.decode_thread(opened.folder / "trace.json", tid)
    reference_gaps, count = [], 0
    for item in reference:
        if isinstance(item, libipt.Insn):
            count += 1
        elif isinstance(item, tuple) and item[0] == "error":
            reference_gaps.append((count, item[1]))
    assert [(gap.index - k, gap.code) for k, gap in enumerate(gaps)] == reference_gaps

    position = 0  # where in the ground truth the previous run ended
    last_ip = None
    for k, (_gap_before, run) in enumerate(found):
        if run:
            # Each run is a contiguous stretch of the ground truth, after the previous one.
            start = next(
                (s for s in range(position, len(truth) - len(run) + 1) if truth[s : s + len(run)] == run), None
            )
            assert start is not None, f"run {k} ({len(run)} instructions) is not in the ground truth"
            position = start + len(run)
            last_ip = run[-1]
        if k < len(gaps):
            gap = gaps[k]
            assert gap.last_ip == last_ip  # the last instruction decoded before it, however many gaps ago
            if run:
                # The run stops exactly where the thread jumped into the missing module.
                assert position < len(truth) and in_missing_module(truth[position]), f"gap {k}"
    assert not any(in_missing_module(a) for _gap, run in found for a in run)
    decoded_count = sum(len(run) for _gap, run in found)
    assert decoded.instruction_count == decoded_count < len(truth)


# -- 2. cursors -------------------------------------------------------------------------------------


def check_cursor(decoded, expander, seed):
    forwards = list(walk(decoded, 0, True, expander))
    assert [index for index, _ in forwards] == list(range(decoded.item_count))  # no holes, no repeats
    backwards = list(walk(decoded, decoded.item_count - 1, False, expander))
    assert backwards == forwards[::-1]
    assert all(isinstance(value, int | Gap) for _, value in forwards)

    cursor = TraceCursor(decoded, expander)  # backwards from the newest item, as the dump command reads
    items = list(cursor.items())
    assert [(item.index, item.gap or item.address) for item in items] == backwards
    assert not cursor.has_value and not cursor.next()

    rng = random.Random(seed)
    count = decoded.item_count
    picks = {0, count - 1, *(rng.randrange(count) for _ in range(60))}
    for forward in (True, False):
        cursor = TraceCursor(decoded, expander, forwards=forward)
        for index in sorted(picks):
            assert cursor.seek(index) and cursor.has_value
            item = cursor.item()
            assert item.index == index and (item.gap or item.address) == forwards[index][1]
            assert item.events == decoded.events_before(index)
        assert cursor.seek(-1) and cursor.item().index == count - 1
        assert cursor.seek(-count) and cursor.item().index == 0
        assert not cursor.seek(count) and not cursor.seek(-count - 1)
    # A bounded read moves the cursor past what it gave; the next read continues there.
    cursor = TraceCursor(decoded, expander, forwards=True)
    start = rng.randrange(count)
    cursor.seek(start)
    first = [item.index for item in cursor.items(limit=7)]
    second = [item.index for item in cursor.items(limit=7)]
    assert first + second == list(range(start, min(count, start + 14)))


@pytest.mark.parametrize("name", SCENARIOS)
def test_cursor_walks_the_same_items_both_ways_and_from_anywhere(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        check_cursor(opened.trace.decoded(tid), opened.trace.expander, seed=tid)


@pytest.mark.parametrize("name", SCENARIOS)
def test_cursor_across_parts_of_a_decode_in_pieces(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        trace = opened.trace.trace_bytes(tid)
        decoded = opened.pieces(tid, len(trace))
        check_cursor(decoded, opened.trace.expander, seed=tid)


# -- 3. decoding in pieces equals one pass --------------------------------------------------------


def every_psb(trace):
    """A piece count that makes plan_pieces cut at every PSB (checked)."""
    offsets = psb_offsets(trace)
    count = len(trace)  # one target offset per byte: each PSB is the first at or after its own offset
    assert [start for start, _ in plan_pieces(trace, count)] == (offsets if offsets[:1] == [0] else [0, *offsets])
    return count, len(offsets)


def check_pieces_match_single_pass(opened, tid):
    expander = opened.trace.expander
    trace = opened.trace.trace_bytes(tid)
    whole = opened.single_pass(tid)
    expected = sequence(whole, expander)
    cut_everywhere, psbs = every_psb(trace)
    for count in (cut_everywhere, psbs + 1, 2):
        pieced = opened.pieces(tid, count)
        where = f"thread {tid}, {count} pieces asked, {len(pieced.parts)} decoded"
        assert sequence(pieced, expander) == expected, where
        assert events(pieced) == events(whole), where
        assert pieced.end_ip == whole.end_ip, where
        assert pieced.instruction_count == whole.instruction_count and pieced.error_count == whole.error_count
        if whole.has_timestamps:
            # Timing packets right before a PSB: one pass reads on into the PSB+ and gives its TSC to the
            # instruction before it, a piece starting at the PSB cannot; that one item may differ.
            boundaries = {start - 1 for start in pieced.part_starts}
            ours = [pieced.timestamp(i) for i in range(pieced.item_count)]
            theirs = [whole.timestamp(i) for i in range(whole.item_count)]
            differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
            assert all(i in boundaries and theirs[i] == ours[i + 1] for i in differ), where
    return whole


@pytest.mark.parametrize("name", SCENARIOS)
def test_decoding_in_pieces_equals_one_pass(scenario, name):
    opened = scenario(name)
    for tid in opened.tids:
        whole = check_pieces_match_single_pass(opened, tid)
        assert whole.item_count == opened.trace.decoded(tid).item_count


def test_timestamp_ticks_are_the_same_events_in_pieces_as_in_one_pass(scenario):
    """Time changes show as TICK events between items; a piece restating the time adds none."""
    opened = scenario("timestamps")
    [tid] = opened.tids
    trace = opened.trace.trace_bytes(tid)

    def ticks(decoded):
        cursor = TraceCursor(decoded, opened.trace.expander, forwards=True)
        return [(item.index, item.tsc) for item in cursor.items() for e in item.events if e.type == EventType.TICK]

    whole = ticks(opened.single_pass(tid))
    assert len(whole) >= 5 and [tsc for _, tsc in whole] == sorted(tsc for _, tsc in whole)
    assert ticks(opened.pieces(tid, len(trace))) == whole


# -- 4. the PSB placements native LLDB mis-decodes ------------------------------------------------

BRANCH_KINDS = {"conditional", "return", "indirect-call", "indirect-jump"}


@pytest.fixture(scope="session")
def psb_case(scenario, tmp_path_factory):
    """``psb_case(name)``: a bundle made by test_traces/psb_cases.py from the basic scenario's recording."""
    made = {}

    def get(name):
        if name not in made:
            source = scenario("basic").folder
            path = psb_cases.make_case(source, name, tmp_path_factory.mktemp("psb-cases") / name)
            opened = open_bundle(path.parent)
            opened.psbs = json.loads((path.parent / "psbs.json").read_text())["psbs"]
            made[name] = opened
        return made[name]

    yield get
    for each in made.values():
        each.image.close()


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
    classify = Classifier(CodeMemory(opened.trace.process.modules).read)
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
    classify = Classifier(CodeMemory(opened.trace.process.modules).read)
    assert all(classify[truth[index - 1]].transfer == Transfer.FAR for index in doubled)


# -- 5. memory ----------------------------------------------------------------------------------------

COMPACT = ["basic", "static", "threads", "timestamps", "overflow", "crash", "missing-module", "percpu", "snapshot"]


@pytest.mark.parametrize("name", COMPACT)
def test_decoded_storage_is_compact(scenario, name):
    """At most 2 bytes per instruction where a thread runs its code more than once, 2.5 where it
    hardly does (native LLDB keeps about 40 per item).

    ``snapshot`` keeps 3,349 instructions of mostly distinct code, so its table of distinct
    blocks (10 bytes a row) dominates; ``sample`` (16 instructions) is left out.
    """
    opened = scenario(name)
    for tid in opened.tids:
        decoded = opened.trace.decoded(tid)
        assert decoded.instruction_count > 1000
        limit = 2.5 if name == "snapshot" else 2
        assert decoded.memory_bytes / decoded.instruction_count <= limit, f"thread {tid}"


@pytest.fixture(scope="session")
def million_small(tmp_path_factory):
    """The ``million`` recipe with N=100 (about 130,000 instructions, a few seconds to record)."""
    base = scenarios.BY_NAME["million"]
    recipe = dataclasses.replace(base, name="million-100", cflags=(*base.cflags, "-DN=100"))
    path = scenarios.make(recipe, tmp_path_factory.mktemp("million") / "million-100")
    opened = open_bundle(path.parent)
    yield opened
    opened.image.close()


def test_a_long_loop_decodes_exactly_in_well_under_a_byte_per_instruction(million_small):
    opened = million_small
    [tid] = opened.tids
    decoded = opened.trace.decoded(tid)
    assert decoded.instruction_count > 100_000
    assert decoded.memory_bytes / decoded.instruction_count <= 1
    assert addresses(decoded, opened.trace.expander) == opened.expected(tid)
