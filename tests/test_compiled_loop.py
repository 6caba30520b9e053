"""The compiled decode loop (block_loop.c) against the Python loop: the same storage, column for column.

Every committed bundle, its pieces, perf.data files, damaged and random
traces, more rows than 2-byte ids name, and code that runs on without
branches are decoded with ``LLDB_TRACE_DECODE_LOOP=python`` and without it.
Where the library was not built (no C compiler at install) only the
fallback's tests run.
"""

import json
import subprocess
import sys
from array import array

import pytest
from support.paths import ROOT, TRACES
from support.trace_scripts import cases

from lldb_trace import cli, libipt
from lldb_trace.decode import compiled_loop, decode_loop, decode_part, process_image
from lldb_trace.decode.parallel import decode_pieces
from lldb_trace.libipt import ExecMode
from lldb_trace.libipt import IpCompression as Ipc
from lldb_trace.libipt import packets as p
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

ENVIRONMENT = compiled_loop.ENVIRONMENT
BUNDLES = sorted(str(path.parent.relative_to(TRACES)) for path in TRACES.rglob("trace.json"))
CPU = libipt.Cpu(6, 85, 4)
BASE = 0x400000

needs_library = pytest.mark.skipif(
    compiled_loop.library_path() is None, reason="block_loop.c was not built (no C compiler at install)"
)


def storage(part):
    """Everything a DecodedPart holds but the name of its loop: each column with its type code, each scalar."""
    held = {}
    for name, value in vars(part).items():
        if name in ("decode_loop", "_block_ids"):  # which loop; a lookup table made on demand
            continue
        if isinstance(value, array):
            held[name] = (value.typecode, value.tobytes())
        else:
            held[name] = list(value) if name == "gaps" else value
    return held


def with_loop(monkeypatch, loop, decode):
    """``decode()`` with ``loop`` ("compiled" or "python"), and the parts it gave."""
    monkeypatch.setenv(ENVIRONMENT, loop)
    parts = decode()
    assert {part.decode_loop for part in parts} <= {loop, None}
    return [storage(part) for part in parts]


def both_loops(monkeypatch, decode):
    compiled = with_loop(monkeypatch, "compiled", decode)
    assert compiled == with_loop(monkeypatch, "python", decode)
    return compiled


def whole_decodes(path):
    """Every thread of every process of the bundle at ``path``, decoded as the plugin does (one worker)."""
    bundle = load_trace(path)
    parts = []
    for process in bundle.processes:
        trace = ProcessTrace(bundle, process, workers=1)
        for tid in trace.tids:
            decoded = trace.decoded(tid)
            parts += decoded.parts if decoded is not None else []
    return parts


@needs_library
def test_the_built_library_is_this_version_of_block_loop_c(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert compiled_loop.unavailable_reason() is None


@needs_library
@pytest.mark.parametrize("name", BUNDLES)
def test_every_committed_bundle_decodes_alike_with_either_loop(monkeypatch, name):
    parts = both_loops(monkeypatch, lambda: whole_decodes(TRACES / name))
    assert sum(part["item_count"] for part in parts) > 0


@pytest.fixture
def calls_into_c(monkeypatch):
    """``(events, time stamps, whether the part's last time stamp was replaced)`` of every compiled loop call."""
    calls, run = [], compiled_loop.CompiledLoop.run

    def recorded(loop, status):
        status = run(loop, status)
        calls.append((loop._run.new_events, loop._run.new_tsc, loop._run.tsc_replaced))
        return status

    monkeypatch.setattr(compiled_loop.CompiledLoop, "run", recorded)
    return calls


@needs_library
@pytest.mark.parametrize("name", ["cycles", "timestamps", "overflow", "percpu"])
def test_small_outputs_hand_events_and_time_stamps_over_alike(monkeypatch, calls_into_c, name):
    """With room for 64 blocks a call, the compiled loop returns every few time updates and continues from the
    part's last time stamp, which it is handed each call: the Python loop's storage.  (Batches of fewer blocks
    would move where a loop without branches is noticed, which both loops check once a batch.)"""
    monkeypatch.setattr(decode_loop, "_BATCH", range(64))
    monkeypatch.setattr(compiled_loop, "_OUTPUT_BATCHES", 1)
    parts = both_loops(monkeypatch, lambda: whole_decodes(TRACES / name))
    assert sum(part["item_count"] for part in parts) > 0
    assert name != "cycles" or sum(1 for _, stamps, _ in calls_into_c if stamps) > 20  # calls that kept time stamps


@needs_library
def test_a_time_stamp_at_the_parts_last_item_replaces_its_value_as_add_timestamp_does(monkeypatch, calls_into_c):
    """C continues from the time stamp the part holds.  The cycles trace begins with CBR, ENABLED and
    EXEC_MODE at item 0 with other times; here Python records the first two (as after a held event) and the
    compiled loop the third, which must replace the part's last value, not add an entry at the same item."""
    sync = decode_loop._sync

    def python_takes_two(decoder, decoded):
        status = sync(decoder, decoded)
        if decoded.item_count == 0 and not decoded.tsc_items:
            for _ in range(2):
                status, event = decoder.event()
                decode_loop._record(decoder, decoded, event)
        return status

    monkeypatch.setattr(decode_loop, "_sync", python_takes_two)
    [part] = both_loops(monkeypatch, lambda: whole_decodes(TRACES / "cycles"))
    assert calls_into_c[0][2] and array("Q", part["tsc_items"][1])[:2].tolist() != [0, 0]


@needs_library
@pytest.mark.parametrize("name", ["basic", "threads", "overflow", "timestamps", "cycles", "crash"])
def test_pieces_decode_alike_with_either_loop(monkeypatch, name):
    """Pieces trim their overrun after the loop: the rows the C table made are looked up again in Python."""
    bundle = load_trace(TRACES / name)
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process, workers=1)
    image = process_image(process)

    def decode():
        return [
            part
            for tid in trace.tids
            for count in (2, 3, 5)
            for part in decode_pieces(trace.trace_bytes(tid), trace.cpu, image, trace.expander, count)
        ]

    both_loops(monkeypatch, decode)


@needs_library
@pytest.mark.parametrize("case", ["truncated", "snapshot", "percpu", "timestamps"])
def test_perf_data_decodes_alike_with_either_loop(monkeypatch, tmp_path, case):
    path = cases.make(case, tmp_path)
    both_loops(monkeypatch, lambda: whole_decodes(path))


_DAMAGED = """
import json, os, random, sys
sys.path.insert(0, sys.argv[1])
from support.input_mutations import SEEDS, trace_mutant
from support.paths import TRACES
from test_compiled_loop import storage
from lldb_trace.decode import decode_part, process_image
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

PSB_PLUS = bytes.fromhex("0282") * 8 + bytes.fromhex("0223")
summary = {"cases": 0, "differ": [], "errors": 0, "with_errors": 0}

def decode(data, trace, image, what):
    found = []
    for loop in ("compiled", "python"):
        os.environ["LLDB_TRACE_DECODE_LOOP"] = loop
        found.append(storage(decode_part(data, trace.cpu, image, trace.expander)))
    summary["cases"] += 1
    if found[0] != found[1]:
        summary["differ"].append(what)
    summary["errors"] += len(found[0]["gaps"])
    summary["with_errors"] += bool(found[0]["gaps"])

for seed in (*SEEDS, "cycles"):  # cycles: a timing update every few dozen instructions
    bundle = load_trace(TRACES / seed)
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process, workers=1)
    image = process_image(process)
    for k in range(int(sys.argv[2])):
        data, what = trace_mutant(TRACES / seed / "trace.json", random.Random(f"{seed} {k}"))
        decode(data, trace, image, f"{seed} {k}: {what}")
    rng = random.Random(seed)
    for k in range(int(sys.argv[2])):
        data = bytearray(rng.randbytes(rng.choice((64, 4096, 65536))))
        for _ in range(rng.choice((1, 4, 32))):
            at = rng.randrange(len(data))
            data[at:at] = PSB_PLUS
        decode(bytes(data), trace, image, f"{seed} random {k}")
print(json.dumps(summary))
"""


@needs_library
def test_damaged_and_random_traces_decode_alike_without_crashing():
    """In a child process: a crash fails this test, not the run.  Each damaged trace gets gaps, never a fault."""
    command = [sys.executable, "-c", _DAMAGED, str(ROOT / "tests"), "12"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["cases"] > 100 and summary["differ"] == []
    assert summary["with_errors"] > summary["cases"] // 2 and summary["errors"] > summary["cases"]


def _code_image(tmp_path, code):
    path = tmp_path / "code.bin"
    path.write_bytes(code)
    image = libipt.Image("code")
    image.add_file(str(path), 0, len(code), BASE)
    return image


@needs_library
def test_more_rows_than_two_byte_ids_name_widen_the_sequence_alike(monkeypatch, tmp_path):
    """70,000 conditional jumps, each its own block: rows past 65,535, over several calls of the compiled loop."""
    count = 47 * 1500  # TNT-64 packets of 47 branches each
    image = _code_image(tmp_path, bytes([0x74, 0x00]) * count + b"\xc3")  # jz to the next instruction; ret
    stream = [p.Psb(), p.Psbend(), p.ModeExec(ExecMode.BIT64), p.TipPge(Ipc.SEXT_48, BASE)]
    stream += [p.Tnt64.from_taken([True] * 47)] * (count // 47)
    trace = libipt.encode([*stream, p.TipPgd(Ipc.SUPPRESSED, 0)], capacity=1 << 16)
    [part] = both_loops(monkeypatch, lambda: [decode_part(trace, CPU, image)])
    assert part["block_sequence"][0] == "I" and len(part["block_ips"][1]) // 8 == count + 1
    assert part["instruction_count"] == count + 1 and not part["gaps"]


@needs_library
def test_code_that_runs_on_without_branches_stops_alike(monkeypatch, tmp_path):
    """call; jmp back: blocks end at each call and never read trace, so both loops give up after two batches."""
    image = _code_image(tmp_path, bytes([0xE8, 0, 0, 0, 0, 0xEB, 0xF9]))  # L: call M; M: jmp L
    trace = libipt.encode([p.Psb(), p.Psbend(), p.ModeExec(ExecMode.BIT64), p.TipPge(Ipc.SEXT_48, BASE)])
    [part] = both_loops(monkeypatch, lambda: [decode_part(trace, CPU, image)])
    [gap] = part["gaps"]
    assert gap.code == -1001 and part["item_count"] > 8192


@pytest.fixture
def fresh_library():
    """Looks for the library again before and after the test (the result is kept per process)."""
    compiled_loop._library.cache_clear()
    yield
    compiled_loop._library.cache_clear()


def test_without_the_library_the_python_loop_decodes_and_says_why(monkeypatch, capsys, fresh_library):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    monkeypatch.setattr(compiled_loop, "library_path", lambda: None)
    assert "not built" in compiled_loop.unavailable_reason()
    assert {part.decode_loop for part in whole_decodes(TRACES / "basic")} == {"python"}
    assert cli.main(["dump", str(TRACES / "basic")]) == 0
    out = capsys.readouterr().out
    assert "decode loop: Python (no compiled loop: it was not built when the package was installed" in out


@needs_library
def test_a_library_from_another_version_of_the_source_is_not_used(monkeypatch, fresh_library):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    monkeypatch.setattr(compiled_loop, "_ABI", compiled_loop._ABI + 1)
    assert "built from another version of block_loop.c" in compiled_loop.unavailable_reason()


@needs_library
def test_the_info_says_which_loop_decoded(monkeypatch, capsys):
    lines = {"compiled": "decode loop: compiled (C)", "python": f"no compiled loop: {ENVIRONMENT}=python"}
    for loop, line in lines.items():
        monkeypatch.setenv(ENVIRONMENT, loop)
        assert cli.main(["dump", str(TRACES / "crash"), "--json"]) == 0
        decoded = json.loads(capsys.readouterr().out)["threads"][0]["decoded"]
        assert decoded["decodeLoop"] == loop
        assert cli.main(["dump", str(TRACES / "crash")]) == 0
        assert line in capsys.readouterr().out
