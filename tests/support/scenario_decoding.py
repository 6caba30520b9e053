"""Committed scenarios opened for decoding, and what the decoder tests compare: walks, events, decodes in pieces.

Shared by test_decoder.py, test_psb_placements.py and test_tail_decode.py
(their fixtures, ``scenario`` and ``psb_case``, are in conftest.py).
"""

import dataclasses
from pathlib import Path

from lldb_trace import libipt
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.decode import decode_part, process_image
from lldb_trace.decode.cursor import walk
from lldb_trace.decode.decoded_thread import DecodedThread, Gap
from lldb_trace.decode.parallel import decode_pieces, plan_pieces, psb_offsets
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

from .paths import TRACES

SCENARIOS = sorted(p.parent.name for p in TRACES.glob("*/trace.json"))


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
