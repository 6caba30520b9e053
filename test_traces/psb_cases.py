"""Trace streams with PSBs where native LLDB's per-PSB decoding goes wrong, made from a real recording.

    python test_traces/psb_cases.py OUTDIR [SOURCE_BUNDLE]     (default SOURCE_BUNDLE: test_traces/basic)

Native LLDB (lldb-22) decodes a trace one PSB segment at a time and gets two
placements wrong:

- ``before-branch``: a PSB+ right before a branch (a conditional jump, an
  indirect call or jump, a return).  The segment before it ends needing the
  branch's packet, which is in the next segment.
- ``after-reenable``: a segment that ends with disable/enable events right
  before the next PSB (a syscall's ``TIP.PGD``, then ``MODE.Exec, TIP.PGE``,
  then at once a PSB+).

The recorder places its periodic PSBs only before non-branch instructions,
once ``psb_period`` bytes were written, so it reaches these placements only by
chance.  This script replays a recorded thread's ground truth (every executed
address, single-stepped) through the recorder (ThreadRecorder) and stream writer
(lldb_trace.capture.encoder.thread_recorder and pt_writer), with the periodic PSBs switched off
and PSB+ packets forced exactly where a case wants them.  The packets are the
recorder's scheme (pt_writer.py); only the PSB positions differ.  The result is
checked with libipt's instruction decoder to decode exactly to the ground
truth before it is written.

Each case is a bundle ``OUTDIR/<case>/`` (trace.json, traces/<tid>.ipt,
ground_truth/<tid>.txt, modules/ with the copied program) plus ``psbs.json``:
for every forced PSB, its stream offset, the index of the instruction it
precedes and that instruction's kind.  A ``control`` case has PSBs only before
plain instructions well away from any disable, as the recorder places them.
"""

import json
import shutil
import sys
from pathlib import Path

import capstone
from capstone import x86

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from lldb_trace import libipt  # noqa: E402
from lldb_trace.capture.encoder.ground_truth import GroundTruth  # noqa: E402
from lldb_trace.capture.encoder.thread_recorder import RecorderOptions, ThreadRecorder  # noqa: E402
from lldb_trace.decode import ModuleBytes, process_image  # noqa: E402
from lldb_trace.trace_files import load_trace  # noqa: E402
from lldb_trace.x86.instructions import Classifier, Transfer  # noqa: E402

CASES = ("before-branch", "after-reenable", "control")
NEVER = 1 << 40  # a psb_period no stream reaches: no periodic PSBs
SPACING = 40  # instructions at least between two forced PSBs (so each segment holds some code)


class CaseError(Exception):
    """The source bundle cannot be replayed into a case."""


def branch_kind(module_bytes, address):
    """The branch at ``address``: conditional, return, indirect-call, indirect-jump; None for any other."""
    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    cs.detail = True
    insn = next(cs.disasm(module_bytes.read(address, 15), address, 1), None)
    if insn is None:
        return None
    groups = set(insn.groups)
    if capstone.CS_GRP_RET in groups:
        return "return"
    direct = bool(insn.operands) and insn.operands[0].type == x86.X86_OP_IMM
    if capstone.CS_GRP_CALL in groups:
        return None if direct else "indirect-call"
    if capstone.CS_GRP_JUMP in groups:
        if insn.id == x86.X86_INS_JMP:
            return None if direct else "indirect-jump"
        return "conditional"
    return None


class _Replay:
    """One thread's ground truth replayed through a ThreadRecorder, with PSBs forced by ``case``."""

    def __init__(self, truth, module_bytes, case):
        self.truth, self.module_bytes, self.case = truth, module_bytes, case
        self.classifier = Classifier(module_bytes.read)
        self.recorder = ThreadRecorder(0, truth.addresses[0], self.classifier, RecorderOptions(psb_period=NEVER))
        self.forced = []  # (stream offset, instruction index, kind)
        self._last_forced = -SPACING
        self._kinds_seen = {}
        self._since_enable = 0

    def run(self):
        addresses, recorder = self.truth.addresses, self.recorder
        if self.truth.lost or self.truth.snapshot_from:
            raise CaseError("the source thread has overflow gaps or is a snapshot: replay needs a whole trace")
        for index in range(len(addresses) - 1):
            self._before(index)
            recorder.stepped(addresses[index + 1])
        if self.truth.ended != "exited" or self.classifier[addresses[-1]].transfer != Transfer.FAR:
            raise CaseError(f"the source thread ended {self.truth.ended!r}, not with an exit syscall")
        recorder.exited()
        if list(recorder.truth.addresses) != list(addresses):
            raise CaseError("the replay did not reproduce the ground truth")
        return recorder.finish()

    def _force_psb(self, index, kind):
        writer = self.recorder.writer
        writer.last_psb = writer.written - writer.psb_period  # due now
        offset = writer.written
        writer.resync(self.truth.addresses[index], index)
        self.forced.append((offset, index, kind))
        self._last_forced = index

    def _before(self, index):
        """Called before instruction ``index`` runs: force a PSB+ in front of it if the case wants one."""
        recorder, writer = self.recorder, self.recorder.writer
        address = self.truth.addresses[index]
        insn = self.classifier[address]
        if not writer.enabled:
            if index == 0 or self.case != "after-reenable":
                self._since_enable = 0
                return
            # A re-enable (after a syscall): TIP.PGE at this instruction, then at once PSB+ with FUP at it
            # (only where the instruction is no branch, so the case does not mix in the other one).
            writer.enable(address, index)
            if index - self._last_forced >= SPACING and insn.transfer in (Transfer.OTHER, Transfer.DIRECT):
                self._force_psb(index, "after-reenable")
            self._since_enable = 0
            return
        self._since_enable += 1
        if index - self._last_forced < SPACING or recorder._overflow_state != "off":
            return
        if self.case == "before-branch" and insn.transfer in (Transfer.CONDITIONAL, Transfer.INDIRECT):
            kind = branch_kind(self.module_bytes, address)
            # Every kind, a few times each, spread over the whole run.
            if kind and self._kinds_seen.get(kind, 0) < 12:
                self._kinds_seen[kind] = self._kinds_seen.get(kind, 0) + 1
                self._force_psb(index, kind)
        elif self.case == "control" and insn.transfer == Transfer.OTHER and not insn.repeats and self._since_enable > 8:
            following = [self.classifier[a] for a in self.truth.addresses[index : index + 8]]
            if all(f.transfer != Transfer.FAR for f in following):
                self._force_psb(index, "plain")


def check_decodes_exactly(stream, image, cpu, addresses):
    """Raise CaseError unless libipt's instruction decoder turns ``stream`` into ``addresses`` exactly."""
    decoded = []
    with libipt.InsnDecoder(libipt.Config(stream, cpu), image) as decoder:
        status = decoder.sync_forward()
        while True:
            while status & libipt.StatusFlag.EVENT_PENDING:
                status, _event = decoder.event()
            try:
                status, insn = decoder.next()
            except libipt.LibiptError as error:
                if error.code != libipt.ErrorCode.EOS:
                    raise CaseError(f"libipt fails on the made stream: {error}") from None
                break
            decoded.append(insn.ip)
    if decoded != list(addresses):
        raise CaseError("libipt's decode of the made stream differs from the ground truth")


def make_case(source, case, outdir, tid=None):
    """Write bundle ``outdir`` for ``case`` from thread ``tid`` (default: the first) of ``source``.

    ``source`` is a recorded bundle folder (its trace.json and ground_truth/).
    Returns ``outdir / "trace.json"``.
    """
    if case not in CASES:
        raise CaseError(f"unknown case {case!r}: one of {', '.join(CASES)}")
    source, outdir = Path(source), Path(outdir)
    bundle = load_trace(source)
    process = bundle.processes[0]
    tid = process.threads[0].tid if tid is None else tid
    truth = GroundTruth.read(source / "ground_truth" / f"{tid}.txt")
    module_bytes = ModuleBytes(process.modules)
    replay = _Replay(truth, module_bytes, case)
    stream = replay.run()
    cpu = libipt.Cpu(bundle.cpu.family, bundle.cpu.model, bundle.cpu.stepping)
    image = process_image(process)
    with image:
        check_decodes_exactly(stream, image, cpu, truth.addresses)

    if outdir.exists():
        shutil.rmtree(outdir)
    (outdir / "traces").mkdir(parents=True)
    (outdir / "ground_truth").mkdir()
    description = json.loads((source / "trace.json").read_text())
    spec = description["processes"][0]
    spec["threads"] = [{"tid": tid, "iptTrace": f"traces/{tid}.ipt"}]
    for module in spec["modules"]:
        if "file" in module:
            copied = outdir / module["file"]
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / module["file"], copied)
    (outdir / "traces" / f"{tid}.ipt").write_bytes(stream)
    shutil.copy2(source / "ground_truth" / f"{tid}.txt", outdir / "ground_truth" / f"{tid}.txt")
    (outdir / "trace.json").write_text(json.dumps(description, indent=2) + "\n")
    forced = [{"offset": offset, "index": index, "kind": kind} for offset, index, kind in replay.forced]
    (outdir / "psbs.json").write_text(json.dumps({"case": case, "tid": tid, "psbs": forced}, indent=2) + "\n")
    return outdir / "trace.json"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1].strip())
        return 0 if argv else 2
    outdir = Path(argv[0])
    source = Path(argv[1]) if len(argv) > 1 else HERE / "basic"
    for case in CASES:
        path = make_case(source, case, outdir / case)
        count = len(json.loads((path.parent / "psbs.json").read_text())["psbs"])
        print(f"{case}: {path} ({count} forced PSBs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
