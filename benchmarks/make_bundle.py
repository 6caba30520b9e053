"""Build the benchmark's large Intel PT bundle (>= 10 million instructions) and check it.

    python benchmarks/make_bundle.py [--out DIR] [--n N] [--force] [--no-verify]

How the bundle is made: the repository's software recorder (lldb_trace.capture)
single-steps ``test_traces/src/million.c`` built with ``-DN=1000`` (the
``million`` recipe of test_traces/scenarios.py, N raised from 300) from ``main``
until the process exits, and writes LLDB's native intel-pt bundle format with
the executable copied under ``modules/``.  The PT stream is real: every packet
comes from one observed single step, and ``ground_truth/<tid>.txt`` lists every
executed address.  Nothing is synthesized or repeated: the instruction count is
about 13*N*N (N=1000: about 13.0M; the exact count is in recording.json).

Why plain recording: the recorder runs at 16,000-42,000 instructions/s on the
2-core development machine, depending on load (million.c, N=100: 131,809
instructions in 3.1-8.2 s; N=300: 1,173,209 in 32 s), so N=1000 takes about
6 minutes (up to ~13 on a busy machine).  That is affordable once: the
bundle is cached in ``benchmarks/out/bundle-10m/`` (gitignored) and only rebuilt
with ``--force``.  So no shortcut (such as repeating a shorter run's stream)
was needed: the whole stream is one real run.

The bundle is written to a temporary sibling directory and renamed into place
only after it is complete, so an interrupted build never counts as cached.

After building (and on every run unless ``--no-verify``) it is decoded with
libipt's block decoder through the repository's binding
(tests/support/reference_decode.py): the decoded instruction total must equal the
ground-truth count in recording.json, and the blocks must tile the ground
truth addresses exactly.
"""

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "out" / "bundle-10m"
DEFAULT_N = 1000
MIN_INSTRUCTIONS = 10_000_000

for _extra in (ROOT / "test_traces", ROOT / "tests"):
    if str(_extra) not in sys.path:
        sys.path.insert(0, str(_extra))


def bundle_ready(outdir):
    """True when ``outdir`` holds a complete bundle (it is only ever renamed into place complete)."""
    outdir = Path(outdir)
    return (outdir / "trace.json").is_file() and (outdir / "recording.json").is_file()


def recorded_instructions(outdir):
    """The ground-truth instruction count per thread, from recording.json: ``{tid: count}``."""
    status = json.loads((Path(outdir) / "recording.json").read_text())
    return {int(tid): count for tid, count in status["instructions"].items()}


def build_bundle(outdir=DEFAULT_OUT, n=DEFAULT_N, force=False, log=print):
    """Record million.c (-DN=n) into ``outdir`` unless a complete bundle is there; returns trace.json's path."""
    import scenarios  # test_traces/scenarios.py: the recipes of the committed bundles

    outdir = Path(outdir)
    if bundle_ready(outdir) and not force:
        log(f"cached: {outdir} (use --force to rebuild)")
        return outdir / "trace.json"
    base = scenarios.BY_NAME["million"]
    scenario = dataclasses.replace(base, name=f"million-{n}", cflags=(*base.cflags, f"-DN={n}"))
    staging = outdir.with_name(outdir.name + ".partial")
    log(f"recording million.c -DN={n} (about {13 * n * n:,} instructions; minutes at 16k-40k instructions/s) ...")
    started = time.perf_counter()
    scenarios.make(scenario, staging)  # build, record, write_bundle(copy_program=True)
    seconds = time.perf_counter() - started
    if outdir.exists():
        shutil.rmtree(outdir)
    os.replace(staging, outdir)
    log(f"recorded in {seconds:.1f} s")
    return outdir / "trace.json"


def verify(bundle_path, log=print):
    """Decode every thread with libipt's block decoder; check counts and addresses against the ground truth.

    Returns ``{tid: decoded instruction count}``; raises AssertionError on any mismatch.
    """
    from support import reference_decode  # tests/support/reference_decode.py

    from lldb_trace import libipt
    from lldb_trace.capture.encoder.ground_truth import GroundTruth

    bundle_path = Path(bundle_path)
    expected = recorded_instructions(bundle_path.parent)
    decoded = {}
    for tid, count in expected.items():
        started = time.perf_counter()
        items = reference_decode.decode_thread(bundle_path, tid, libipt.BlockDecoder)
        seconds = time.perf_counter() - started
        blocks = [item for item in items if isinstance(item, libipt.Block)]
        errors = [item for item in items if isinstance(item, tuple) and item[0] == "error"]
        decoded[tid] = sum(block.ninsn for block in blocks)
        log(f"  thread {tid}: libipt decoded {decoded[tid]:,} instructions in {len(blocks):,} blocks "
            f"({seconds:.1f} s through ctypes), {len(errors)} errors; ground truth {count:,}")  # fmt: skip
        assert not errors, f"thread {tid}: decode errors {errors[:5]}"
        assert decoded[tid] == count, f"thread {tid}: decoded {decoded[tid]}, ground truth {count}"
        truth = GroundTruth.read(bundle_path.parent / "ground_truth" / f"{tid}.txt")
        assert len(truth.addresses) == count and not truth.lost and not truth.snapshot_from
        assert reference_decode.blocks_tile(items, truth.addresses), f"thread {tid}: blocks differ from ground truth"
        log(f"  thread {tid}: blocks tile the ground-truth addresses exactly")
    return decoded


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"bundle directory (default {DEFAULT_OUT})")
    parser.add_argument("--n", type=int, default=DEFAULT_N, help=f"million.c's N (default {DEFAULT_N})")
    parser.add_argument("--force", action="store_true", help="rebuild even if the bundle exists")
    parser.add_argument("--no-verify", action="store_true", help="skip the libipt decode check")
    args = parser.parse_args(argv)
    bundle = build_bundle(args.out, args.n, args.force)
    total = sum(recorded_instructions(bundle.parent).values())
    if not args.no_verify:
        verify(bundle)
    if total < MIN_INSTRUCTIONS:
        print(f"warning: only {total:,} instructions (< {MIN_INSTRUCTIONS:,}); raise --n", file=sys.stderr)
    print(f"instructions: {total}")
    print(f"bundle: {bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
