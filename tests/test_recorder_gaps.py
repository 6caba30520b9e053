"""A gap the recorder makes (the live recorder's misprediction: the thread's path to where it stopped is unknown)
loses the instructions since the last packet too: a decoder meets the overflow where it next needs a packet, and
drops the block it was in.  The recorder counted them, so every known state it kept after the gap named the
instruction 10 places later than the trace's (setlocale's gconv lookup: "the states are of another recording",
and no value shown).  A real program's recorded flow (test_traces/static's ground truth) is replayed with a gap at
many places, decoded with libipt, and each instruction the recorder counts must be the trace's at that count."""

import numpy as np
import pytest
from support.paths import TRACES

from lldb_trace.bundle.model import CpuInfo
from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.capture.encoder.thread_recorder import RecorderOptions, ThreadRecorder
from lldb_trace.decode import decode_thread_trace
from lldb_trace.decode.decoder_cpu import decoder_cpu
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace
from lldb_trace.values.process_values import position_addresses

STATIC = TRACES / "static"
TID = 5668
SKIPPED = 30  # instructions the gap's stretch ran


@pytest.fixture(scope="module")
def static_trace():
    bundle = load_trace(STATIC / "trace.json")
    return ProcessTrace(bundle, bundle.processes[0])


@pytest.mark.parametrize("cut", range(40, 1100, 13))
def test_each_instruction_counted_is_the_traces_at_that_count(static_trace, cut):
    truth = GroundTruth.read(STATIC / "ground_truth" / f"{TID}.txt").addresses
    recorder = ThreadRecorder(TID, truth[0], static_trace.expander.classifier, RecorderOptions(512, None))
    for address in truth[1:cut]:
        recorder.stepped(address)
    recorder.lost(truth[cut + SKIPPED])
    for address in truth[cut + SKIPPED + 1 :]:
        recorder.stepped(address)
    recorder.exited()
    cpu = decoder_cpu(CpuInfo("intel", 6, 85, 4, None))
    decoded = decode_thread_trace(recorder.finish(), cpu, static_trace.image, static_trace.expander)
    addresses = position_addresses(decoded, static_trace.expander)
    held = addresses[np.flatnonzero(addresses)]  # the trace's instructions, in order
    counted = np.asarray(recorder.truth.addresses, dtype=np.uint64)
    where = recorder.truth.traced(np.arange(len(counted)))
    assert len(decoded.gaps) == 1 and (where >= 0).sum() == len(held)
    assert (held[where[where >= 0]] == counted[where >= 0]).all()
