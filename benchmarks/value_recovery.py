"""Value recovery against single-stepped ground truth: coverage, wrong values, time and memory.

    .venv/bin/python benchmarks/value_recovery.py [--steps N] [--speed M] [--source FILE] [-- CFLAGS...]

Builds the program twice (lazy binding, and ``-Wl,-z,now``), single-steps
each from main for N instructions with ptrace (tests/support/stepped_truth.py),
runs ThreadValues from the end state (the core) and prints the share of GPR
values (rax..r15 and rip; rflags not counted) known over the last 10,000
instructions and over the whole run (and, over the last 10,000, the share of
the GPR values the instructions read: REPT's kind of measure), the wrong ones (must be 0), the
conflicts, and the engine's time and memory.  ``--speed M`` also steps M
instructions of the lazy build without keeping registers and times the
engine over all of them (no ground truth: speed and memory only).  ``--why``
lists, for the GPR values left unknown over the last 10,000, the instructions
that began them (what to teach the engine next) and the writes at unknown
addresses there (each a barrier that wipes all memory).  ``--start`` also
solves each run with the state where stepping began and each system call's
results (registers and the memory it wrote, as ``lldb-trace record`` saves
them) besides the end state, and with ``--recorded`` with the registers
before every instruction as well (what ``lldb-trace record`` keeps in
``registerStates``): then the share of stack and heap bytes is what counts.  The
output ends with a markdown table for benchmarks/RESULTS.md.
"""

import argparse
import collections
import resource
import shlex
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.stepped_truth import build_program, register_score, step_program  # noqa: E402

from lldb_trace.values.machine_state import GENERAL, TRACKED, MachineState  # noqa: E402
from lldb_trace.values.recovery import CHUNK, ThreadValues  # noqa: E402
from lldb_trace.values.registers import INDEX  # noqa: E402

LAST = 10_000
MODES = {"lazy binding": [], "-z now": ["-Wl,-z,now"]}


def score_memory(values, samples, first):
    """``(share of the sampled bytes known, wrong ones)`` for the samples at positions from ``first`` on."""
    known = wrong = total = 0
    for position, address, data in samples:
        if position < first:
            continue
        shown, mask = values.memory_at(position, address, len(data))
        for k, byte in enumerate(data):
            total += 1
            if mask[k]:
                known += 1
                wrong += shown[k] != byte
    return (known / total if total else 0.0), wrong


def use_score(values, truth, first):
    """``(share of the GPR values the instructions from position ``first`` on read that are known, wrong ones)``:
    REPT's kind of measure (values in use), beside the issue's (every register at every position)."""
    known = wrong = total = 0
    names = {INDEX[name]: name for name in GENERAL if name != "rip"}
    for position in range(first, len(truth.addresses)):
        effect = values._effect(truth.addresses[position])
        shown = values.registers_at(position)
        for name in (names[number] for number in (effect.reads if effect else ()) if number in names):
            total += 1
            if shown[name] is not None:
                known += 1
                wrong += shown[name] != truth.registers[position][name]
    return (known / total if total else 0.0), wrong


def why(values, first, top=15):
    """The instructions whose results stay unknown most often from position ``first`` on, and the writes at unknown
    addresses there (the engine's internals: a diagnosis, not an interface)."""
    writers, barriers = collections.Counter(), collections.Counter()
    for position in range(first, values.count + 1):
        number = min(position // CHUNK, values.chunks - 1)
        chunk, state = values._solved(number), position - number * CHUNK
        for name in GENERAL[:-1]:  # rip is always known
            register = INDEX[name]
            if chunk.register(register, state) is None:
                writer = chunk.structure.starts[register][chunk.segment(register, state)] - 1
                effect = chunk.effects[writer] if writer >= 0 and chunk.active[writer] else None
                writers[
                    f"{effect.kind} {effect.mnemonic} @ {effect.address:#x}" if effect else "window edge or cut"
                ] += 1
        if state < chunk.n and state in chunk.unknown_writes:
            effect = chunk.effects[state]
            barriers[f"{effect.kind} {effect.mnemonic} @ {effect.address:#x}"] += 1
    print(f"  unknown GPR values by the instruction that began them (top {top}):")
    for what, count in writers.most_common(top):
        print(f"    {count:7} {what}")
    print(f"  writes at unknown addresses: {sum(barriers.values())}")
    for what, count in barriers.most_common(top):
        print(f"    {count:7} {what}")


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def solve(truth, with_start=False, recorded=False):
    """(ThreadValues with every window solved, seconds, growth of the peak RSS in MB); ``with_start``: from the
    start state and each system call's results as ``lldb-trace record`` saves them too."""
    known = {}
    if with_start:
        start = MachineState(truth.registers[0], truth.start.read_memory, truth.start.xcr0)
        known = {"start": start, "syscalls": truth.syscall_results}
    if recorded:
        rows = np.array([[state[name] for name in TRACKED] for state in truth.registers], dtype=np.uint64)
        known["recorded"] = (np.arange(len(rows)), rows, TRACKED)
    before, started = _peak_mb(), time.perf_counter()
    values = ThreadValues(truth.addresses, truth.read_code, end=truth.end, end_after_last=True, **known)
    values.memory_at(0, 0, 1)  # every window, newest to oldest (registers a recorder saw need none solved)
    return values, time.perf_counter() - started, _peak_mb() - before


def measure(mode, truth, with_start, explain, recorded=False):
    """Solves one run, prints what it reached and returns its table row."""
    values, seconds, grown = solve(truth, with_start, recorded)
    count = len(truth.addresses)
    last, last_wrong = register_score(values, truth, max(0, count - LAST))
    whole, whole_wrong = register_score(values, truth, 0)
    last_wrong, whole_wrong = len(last_wrong), len(whole_wrong)
    memory = {
        (kind, span): score_memory(values, samples, first)
        for kind, samples in (("stack", truth.samples), ("heap", truth.heap_samples))
        for span, first in (("last", max(0, count - LAST)), ("whole", 0))
    }
    print(
        f"{mode}: {count} instructions; GPR values known: last {LAST:,} {last:.1%} (wrong {last_wrong}), "
        f"whole {whole:.1%} (wrong {whole_wrong}); {seconds:.1f} s, peak RSS +{grown:.0f} MB, "
        f"conflicts {values.conflicts}, unicorn runs {values._emulator.runs}"
    )
    uses, uses_wrong = use_score(values, truth, max(0, count - LAST))
    print(f"  GPR values the instructions read, last {LAST:,}: {uses:.1%} known (wrong {uses_wrong})")
    print("  sampled bytes known: " + ", ".join(
        f"{kind} {span} {share:.1%} (wrong {bad})" for (kind, span), (share, bad) in memory.items()
    ))  # fmt: skip
    stack, heap = memory[("stack", "last")], memory[("heap", "last")]
    memory_cells = f"| {stack[0]:.1%} ({stack[1]} wrong) | {heap[0]:.1%} ({heap[1]} wrong) "
    if explain:
        why(values, max(0, count - LAST))
    return (
        f"| {mode} | {count:,} | {last:.1%} ({last_wrong} wrong) | {whole:.1%} ({whole_wrong} wrong) "
        f"{memory_cells}| {seconds:.1f} s | +{grown:.0f} MB | {values.conflicts} |"
    )


def build(folder, source, cflags, extra):
    binary = Path(folder) / f"program{len(extra)}"
    build_program(source, [*cflags, *extra], binary)
    return binary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--speed", type=int, default=0, help="also time the engine on this many instructions")
    parser.add_argument("--source", default=str(ROOT / "test_traces/src/libc_work.c"))
    parser.add_argument("--until", default=None, help="stop stepping at this function")
    parser.add_argument("--fatal", default=None, help="stop stepping at this signal (SIGSEGV), as a core dump does")
    parser.add_argument("--why", action="store_true", help="list why GPR values stay unknown in the last 10,000")
    parser.add_argument("--start", action="store_true", help="also solve with the start state and system calls")
    parser.add_argument("--recorded", action="store_true", help="and with the registers at every step too")
    parser.add_argument("cflags", nargs="*", default=["-O2", "-DROUNDS=100000"])
    options = parser.parse_args()
    print("$ .venv/bin/python benchmarks/value_recovery.py " + shlex.join(sys.argv[1:]))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        if options.speed:
            binary = build(folder, options.source, options.cflags, [])
            truth = step_program(binary, options.speed, until=options.until, keep_registers=False)
            values, seconds, grown = solve(truth)
            count = len(truth.addresses)
            conflicts = values.conflicts
            print(f"speed: {count} instructions in {seconds:.1f} s, peak RSS +{grown:.0f} MB, conflicts {conflicts}")
            speed = f"{seconds:.1f} s | +{grown:.0f} MB | {conflicts}"
            rows.append(f"| lazy binding, speed | {count:,} | | | | | {speed} |")
            del truth, values
        for mode, extra in MODES.items():
            binary = build(folder, options.source, options.cflags, extra)
            with_start = options.start or options.recorded
            fatal = getattr(signal, options.fatal) if options.fatal else None
            truth = step_program(binary, options.steps, until=options.until, with_start=with_start, fatal=fatal)
            rows.append(measure(mode, truth, False, options.why))
            if options.start:
                rows.append(measure(f"{mode}, start + end", truth, True, options.why))
            if options.recorded:
                rows.append(measure(f"{mode}, lldb-trace record's states", truth, True, False, recorded=True))
    print()
    print(
        f"| build | instructions | GPR known, last {LAST:,} | GPR known, whole | stack bytes, last {LAST:,} "
        f"| heap bytes, last {LAST:,} | engine | memory | conflicts |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
