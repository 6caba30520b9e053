"""How many processes decode (LLDB_TRACE_WORKERS, --workers, the cores), and pieces sent back as raw columns."""

import io
import itertools
import os
import subprocess
import sys
import tempfile
from array import array
from pathlib import Path

import pytest

from lldb_trace.decode import parallel
from lldb_trace.decode.decode_loop import decode_part
from lldb_trace.decode.gap_table import GapTable
from lldb_trace.decode.part_transfer import PartTransferError, read_part, write_part
from lldb_trace.decode.workers import ENVIRONMENT, WorkerCountError, usable_cores, worker_count
from lldb_trace.process_trace import ProcessTrace
from lldb_trace.trace_files import load_trace

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def test_the_default_is_every_core_this_process_may_use(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert worker_count() == usable_cores() == len(os.sched_getaffinity(0))


def test_an_affinity_of_one_core_decodes_in_one_process():
    script = "from lldb_trace.decode.workers import worker_count; print(worker_count())"
    env = {k: v for k, v in os.environ.items() if k != ENVIRONMENT}
    out = subprocess.run(["taskset", "-c", "0", PYTHON, "-c", script], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "1", out.stderr


def test_the_environment_and_the_argument_set_it(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "7")
    assert worker_count() == 7
    assert worker_count(3) == 3  # --workers beats the environment
    bundle = load_trace(ROOT / "test_traces" / "basic")
    assert ProcessTrace(bundle, bundle.processes[0]).workers == 7


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5"])
def test_a_bad_count_is_a_one_line_error(monkeypatch, text):
    monkeypatch.setenv(ENVIRONMENT, text)
    with pytest.raises(WorkerCountError) as raised:
        worker_count()
    assert str(raised.value) == (
        f"{ENVIRONMENT}={text} is not a number of worker processes: give a whole number, 1 or more"
    )
    with pytest.raises(WorkerCountError, match="the worker count is not"):
        worker_count(0)


def test_the_cli_takes_workers_and_refuses_a_bad_count(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    lldb_trace = Path(PYTHON).parent / "lldb-trace"
    bundle = str(ROOT / "test_traces" / "basic")
    good = subprocess.run([lldb_trace, "dump", bundle, "--workers", "2"], capture_output=True, text=True)
    assert good.returncode == 0 and "instructions" in good.stdout, good.stderr
    bad = subprocess.run([lldb_trace, "dump", bundle, "--workers", "0"], capture_output=True, text=True)
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines()[-1].endswith("give a whole number, 1 or more")
    assert "Traceback" not in bad.stderr


def _parts():
    """Decoded parts with events, timestamps, gaps and a truncation: what a piece can hold."""
    for name in ("timestamps", "overflow", "crash"):
        bundle = load_trace(ROOT / "test_traces" / name)
        trace = ProcessTrace(bundle, bundle.processes[0], workers=1)
        for tid in trace.tids:
            data = trace.trace_bytes(tid)
            if data is not None:
                yield decode_part(data, trace.cpu, trace.image, trace.expander)
    truncated = bytes(trace.trace_bytes(trace.tids[0]))
    yield decode_part(truncated[: len(truncated) - 3], trace.cpu, trace.image, trace.expander)


def _fields(part):
    fields = {name: value for name, value in vars(part).items() if not isinstance(value, GapTable)}
    fields["gaps"] = list(part.gaps)
    return fields


def test_a_part_comes_back_whole():
    seen = set()
    for part in _parts():
        stream = io.BytesIO()
        write_part(part, stream)
        back = read_part(stream.getvalue())
        assert _fields(back) == _fields(part)
        assert all(type(value) is array for value in vars(back).values() if isinstance(value, array))
        seen |= {"events"} if part.event_items else set()
        seen |= {"timestamps"} if part.tsc_values else set()
        seen |= {"gaps"} if len(part.gaps) else set()
        seen |= {"truncated"} if part.truncation else set()
    assert seen == {"events", "timestamps", "gaps", "truncated"}


def test_a_stream_cut_anywhere_is_an_error_not_a_part():
    part = next(_parts())
    stream = io.BytesIO()
    write_part(part, stream)
    data = stream.getvalue()
    for cut in (0, 4, 8, 20, len(data) // 2, len(data) - 1):
        with pytest.raises((PartTransferError, ValueError)):
            read_part(data[:cut])


def test_without_memfd_the_pieces_come_back_through_a_temporary_file(monkeypatch):
    """Where memfd_create is refused (a sandbox, an old kernel), children write their pieces to temporary files."""
    bundle = load_trace(ROOT / "test_traces" / "cycles")
    single = ProcessTrace(bundle, bundle.processes[0], workers=1)
    tid = single.tids[0]

    def refused(*_arguments):
        raise OSError(1, "memfd_create is not allowed here")

    made, temporary_file = [], tempfile.TemporaryFile

    def counted():
        made.append(temporary_file())
        return made[-1]

    monkeypatch.setattr(os, "memfd_create", refused)
    monkeypatch.setattr(tempfile, "TemporaryFile", counted)
    monkeypatch.setattr("lldb_trace.decode.PIECE_MIN_BYTES", 1)
    pieced = ProcessTrace(bundle, bundle.processes[0], workers=4)
    decoded = pieced.decoded(tid, for_forest=True)
    assert len(decoded.parts) == len(made) + 1 > 1 and not decoded.gaps  # a file per child
    assert decoded.item_count == single.decoded(tid).item_count
    assert len(pieced.call_forest(tid)) == len(single.call_forest(tid))


@pytest.mark.parametrize(("pieces", "weight"), [(2, 1.0), (2, 1.5), (4, parallel.PARENT_WEIGHT), (3, 2.0)])
def test_the_first_piece_takes_the_share_its_weight_asks(pieces, weight):
    """The parent decodes the first piece and has no piece to write back, so it takes a larger one; each piece
    still begins at a PSB, and together they cover the trace."""
    one = (ROOT / "test_traces" / "cycles" / "traces" / "22406.intelpt_trace").read_bytes()
    trace = one * 40  # a PSB at least every copy
    planned = parallel.plan_pieces(trace, pieces, weight)
    assert len(planned) == pieces
    assert planned[0][0] == 0 and planned[-1][1] == len(trace)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(planned))
    psbs = set(parallel.psb_offsets(trace))
    assert all(start in psbs for start, _ in planned[1:])
    first = planned[0][1] / len(trace)
    assert weight / (weight + pieces - 1) <= first <= weight / (weight + pieces - 1) + len(one) / len(trace)
