"""Ground truth of a recording: every executed instruction address of a thread.

One text file per thread, ``ground_truth/<tid>.txt``: ``#`` header lines with
what a decoder can see, then one hex address per line.  Headers:

- ``# lost A B``: instructions A..B-1 fall in an injected overflow gap;
- ``# snapshot-from N``: the (circular) trace keeps instructions from N on;
- ``# ended REASON``: how the recording of this thread ended.
"""

from array import array
from dataclasses import dataclass, field

import numpy as np


class InstructionCount:
    """In place of the address list where only the count matters: a live recording may run billions."""

    __slots__ = ("count",)

    def __init__(self):
        self.count = 0

    def append(self, _address):
        self.count += 1

    def __len__(self):
        return self.count


@dataclass
class GroundTruth:
    addresses: array = field(default_factory=lambda: array("Q"))
    lost: list = field(default_factory=list)  # [(start, end)] half-open index ranges
    snapshot_from: int = 0
    ended: str = ""

    def traced(self, indices):
        """Where the trace holds each instruction of ``indices`` (uint64 counts of those run), among the instructions
        it keeps: from ``snapshot_from`` on, outside the lost ranges; -1 where it holds none (a known state's
        instruction is named so in a bundle: values/process_values.py)."""
        indices = np.asarray(indices, dtype=np.int64)
        found = indices - self.snapshot_from
        for start, end in self.lost:
            start = max(start, self.snapshot_from)
            if end > start:
                found[indices >= end] -= end - start
                found[(indices >= start) & (indices < end)] = -1
        found[indices < self.snapshot_from] = -1
        return found

    def decodable_segments(self):
        """The address runs a decoder must reproduce, split where the trace has gaps."""
        cuts = sorted((max(start, self.snapshot_from), end) for start, end in self.lost if end > self.snapshot_from)
        segments, since = [], self.snapshot_from
        for start, end in cuts:
            segments.append(list(self.addresses[since:start]))
            since = end
        segments.append(list(self.addresses[since:]))
        return [segment for segment in segments if segment]

    def write(self, path):
        with open(path, "w") as out:
            out.write(f"# {len(self.addresses)} instructions\n")
            for start, end in self.lost:
                out.write(f"# lost {start} {end}\n")
            if self.snapshot_from:
                out.write(f"# snapshot-from {self.snapshot_from}\n")
            if self.ended:
                out.write(f"# ended {self.ended}\n")
            out.write("".join(f"{address:#x}\n" for address in self.addresses))

    @classmethod
    def read(cls, path):
        truth = cls()
        with open(path) as lines:
            for line in lines:
                if line.startswith("# lost "):
                    start, end = line.split()[2:]
                    truth.lost.append((int(start), int(end)))
                elif line.startswith("# snapshot-from "):
                    truth.snapshot_from = int(line.split()[2])
                elif line.startswith("# ended "):
                    truth.ended = line[len("# ended ") :].strip()
                elif not line.startswith("#"):
                    truth.addresses.append(int(line, 16))
        return truth
