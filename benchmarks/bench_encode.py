"""Encoding speed: a recorded thread's instructions fed straight to the PT writer (no ptrace).

    python benchmarks/bench_encode.py BUNDLE_DIR

Reads the ground truth of the bundle's first thread and its modules' code
from the ELF files, then times ThreadRecorder over those steps.
"""

import json
import sys
import time
from pathlib import Path

from lldb_trace.capture.encoder.ground_truth import GroundTruth
from lldb_trace.capture.encoder.thread_recorder import RecorderOptions, ThreadRecorder
from lldb_trace.elf_info import ElfInfo
from lldb_trace.x86.instructions import Classifier


def code_reader(bundle_dir):
    """read(address, size) over the bundle's modules, from their files."""
    bundle = json.loads((bundle_dir / "trace.json").read_text())
    regions = []
    for module in bundle["processes"][0]["modules"]:
        path = bundle_dir / module.get("file", module["systemPath"])
        data = path.read_bytes()
        for s in ElfInfo(path).loaded_segments(int(module["loadAddress"], 16)):
            regions.append((s.vaddr, s.vaddr + s.size, data[s.offset : s.offset + s.size]))

    def read(address, size):
        for start, end, chunk in regions:
            if start <= address < end:
                return chunk[address - start : address - start + size]
        return b""

    return read


def main(bundle_dir):
    bundle_dir = Path(bundle_dir)
    tid = json.loads((bundle_dir / "trace.json").read_text())["processes"][0]["threads"][0]["tid"]
    truth_file = bundle_dir / "ground_truth" / f"{tid}.txt"
    addresses = GroundTruth.read(truth_file).addresses
    classifier = Classifier(code_reader(bundle_dir))
    for address in set(addresses):
        classifier[address]  # decode once up front: the recorder does this while stepping
    flow = ThreadRecorder(1, addresses[0], classifier, RecorderOptions(psb_period=4096))
    started = time.perf_counter()
    for address in addresses[1:]:
        flow.stepped(address)
    flow.stop("end")
    data = flow.finish()
    seconds = time.perf_counter() - started
    count = len(addresses) - 1
    rate = count / seconds
    print(f"encoded {count} instructions into {len(data)} bytes in {seconds:.3f} s: {rate:,.0f} instructions/s")


if __name__ == "__main__":
    main(sys.argv[1])
