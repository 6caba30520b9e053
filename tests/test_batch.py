"""``lldb-trace profile|calls|find|export`` on a real Dask cluster: the answers are the single-process ones.

A local cluster of two worker processes (one for the module) runs every
command over several recordings: a multi-thread bundle, two single-thread
ones and a folder holding a perf.data.  Each answer is compared with the
same analysis run here through the API, thread by thread, and summed here;
exports byte for byte with ``export()`` of every thread.  A worker killed
mid-run costs a retry, not the answer; bad inputs are one-line errors.
"""

import json
import logging
import os
from collections import Counter
from typing import ClassVar

import pytest
from support.paths import HISTORY, TRACES
from support.trace_scripts import cases

from lldb_trace import api
from lldb_trace.batch.analyses import ProfileOf
from lldb_trace.batch.engine import JobFailedError, Progress, run_jobs
from lldb_trace.batch.inputs import InputError, recordings
from lldb_trace.batch.jobs import Source, on_thread
from lldb_trace.batch.merge import merged_profile
from lldb_trace.batch.split_decode import analysed_here, planned_pieces
from lldb_trace.cli import main
from lldb_trace.export import export
from lldb_trace.history.queries import find
from lldb_trace.profile import profile
from lldb_trace.views.matches import shown_matches
from lldb_trace.views.profile import profile_text

distributed = pytest.importorskip("distributed")

BUNDLES = [TRACES / "threads", TRACES / "static", HISTORY / "recursion"]


@pytest.fixture(scope="module")
def scheduler():
    """The address of a local cluster: two worker processes of one thread each, as --cluster takes it."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.CRITICAL,
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def perf_folder(tmp_path_factory):
    """A folder holding one perf.data (the sample's trace, timed in TSC ticks): an input to expand."""
    folder = tmp_path_factory.mktemp("recordings")
    cases.make("sample", folder)
    return folder


@pytest.fixture(scope="module")
def inputs(perf_folder):
    return [*map(str, BUNDLES), str(perf_folder)]


@pytest.fixture(scope="module")
def small(perf_folder):
    """Recordings of programs without libc, quick to symbolize, for the runs that start their own cluster."""
    return [str(TRACES / "static"), str(HISTORY / "recursion"), str(perf_folder)]


@pytest.fixture(scope="module")
def threads(perf_folder):
    """Every traced thread of the inputs, in their order, opened here: the single-process side."""
    paths = [*BUNDLES, perf_folder / "sample.perf.data"]
    return [thread for path in paths for thread in api.open_bundle(path).threads if thread.has_trace]


def run(capsys, *argv):
    """``(exit status, stdout, stderr)`` of ``lldb-trace ARGV`` run here."""
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


def answer(capsys, *argv):
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    return out


def test_profile_is_the_sum_of_the_threads_profiles(capsys, scheduler, inputs, threads):
    document = json.loads(answer(capsys, "profile", *inputs, "--cluster", scheduler, "--json", "-c", "0"))
    profiles = [profile(thread) for thread in threads]
    sums = Counter()
    for made in profiles:
        for row in made.rows:
            sums[row.name, "calls"] += row.calls
            sums[row.name, "exclusive"] += row.exclusive
            sums[row.name, "inclusive"] += row.inclusive
    got = Counter(
        {(row["name"], key): row[key] for row in document["rows"] for key in ("calls", "exclusive", "inclusive")}
    )
    assert +got == +sums
    assert document["instructions"] == sum(made.instructions for made in profiles)
    assert document["timeUnit"] is None  # the bundles have no timing, the perf.data has ticks
    assert [(t["pid"], t["tid"]) for t in document["threads"]] == [(t.pid, t.tid) for t in threads]
    assert document["missing"] == []


def test_profile_text_by_line(capsys, scheduler, small, threads):
    text = answer(capsys, "profile", *small, "--cluster", scheduler, "--by", "line", "-c", "12")
    merged = merged_profile([profile(thread, "line") for thread in threads[4:]], "line")
    assert text.split("\n", 1)[1] == profile_text(merged, merged.rows[:12]).split("\n", 1)[1] + "\n"
    assert text.startswith("Profile of 3 threads in 3 recordings by line: items all of each thread")


def test_one_thread_profile_is_pt_profile(capsys, scheduler):
    """One recording of one thread: the table is pt profile's, row for row, with its time columns."""
    text = answer(capsys, "profile", TRACES / "sample", "--cluster", scheduler, "--by", "module", "-r", "2:")
    made = profile(api.open_bundle(TRACES / "sample").threads[0], "module", "2:")
    assert text.split("\n", 1)[1] == profile_text(made, made.rows[:20]).split("\n", 1)[1] + "\n"
    assert "times in ticks" in text.splitlines()[0]


def test_local_workers_give_the_cluster_answer(capsys, scheduler, small):
    on_cluster = answer(capsys, "profile", *small, "--cluster", scheduler, "-c", "0")
    assert answer(capsys, "profile", *small, "--workers", "1", "-c", "0") == on_cluster


def test_calls_per_function_and_module(capsys, scheduler, inputs, threads):
    document = json.loads(answer(capsys, "calls", *inputs, "--cluster", scheduler, "--json", "-c", "0"))
    functions, modules = Counter(), Counter()
    for thread in threads:
        functions.update({row.name: row.calls for row in profile(thread, "function").rows})
        modules.update({row.name: row.calls for row in profile(thread, "module").rows})
    assert {row["function"]: row["calls"] for row in document["functions"]} == dict(+functions)
    assert {row["module"]: row["calls"] for row in document["modules"]} == dict(+modules)
    assert document["calls"] == sum(functions.values())


def test_find_lists_each_threads_matches(capsys, scheduler, inputs, threads):
    document = json.loads(answer(capsys, "find", *inputs, "--cluster", scheduler, "-f", "worker", "--json", "-c", "0"))
    listed = {(t["pid"], t["tid"]): (t["matches"], t["note"]) for t in document["threads"]}
    assert len(listed) == len(threads)
    for thread in threads:
        matches, note = listed[thread.pid, thread.tid]
        if thread.pid == 5674:  # the threads bundle has worker()
            assert matches == shown_matches(find(thread.history, thread.symbolizer, "worker"), thread.symbolizer)
        else:
            assert not matches and "no function named 'worker'" in note
    assert sum(len(matches) for matches, _note in listed.values()) == 3
    one = answer(capsys, "find", *inputs, "--cluster", scheduler, "-f", "worker", "-t", "5676")
    assert one.startswith(f"{BUNDLES[0]}, process 5674, thread 5676:\nExecutions of worker in the trace")
    status, out, err = run(capsys, "find", TRACES / "static", "--cluster", scheduler, "-f", "nosuch")
    assert status == 1 and not out
    assert err == "error: no function named 'nosuch' in the traced modules, in every recording\n"


def test_a_large_thread_is_decoded_in_pieces_on_its_worker(scheduler):
    """Forked piece decoders inside a Dask worker process give the single pass's answer."""
    thread = api.open_bundle(HISTORY / "exceptions").threads[0]

    def in_pieces(*job):
        import lldb_trace.decode

        smallest, lldb_trace.decode.PIECE_MIN_BYTES = lldb_trace.decode.PIECE_MIN_BYTES, 1
        try:
            return on_thread(*job), len(on_thread(*job[:3], lambda t: t.decoded.parts, 4).value)
        finally:
            lldb_trace.decode.PIECE_MIN_BYTES = smallest

    job = (Source(str(HISTORY / "exceptions"), run="pieces"), thread.pid, thread.tid, ProfileOf("line", None), 4)
    with distributed.Client(scheduler) as client:
        made, parts = client.submit(in_pieces, *job, pure=False).result()
    assert parts > 1
    assert made.value.rows == profile(thread, "line").rows


def test_a_huge_thread_is_decoded_across_the_workers(capsys, scheduler, tmp_path):
    """--split-above: the thread's pieces decode on the cluster's workers, are joined here, and the answers are
    the single process's; the pieces are the ones ProcessTrace cuts (one per worker)."""
    bundles = [TRACES / "basic", TRACES / "threads"]
    single = [thread for path in bundles for thread in api.open_bundle(path).threads if thread.has_trace]
    with distributed.Client(scheduler) as client:
        plans = [
            client.submit(planned_pieces, Source(str(path), run="split"), t.pid, t.tid, 2, 1000, pure=False).result()
            for path in bundles
            for t in api.open_bundle(path).threads
            if t.has_trace
        ]
    assert [len(plan.value) if plan.value else 0 for plan in plans] == [2, 0, 0, 0, 2]  # basic, threads' main: cut
    split = json.loads(answer(capsys, "profile", *bundles, "--cluster", scheduler, "--split-above", "0.001", "--json"))
    whole = json.loads(answer(capsys, "profile", *bundles, "--cluster", scheduler, "--json"))
    assert split == whole
    assert split["instructions"] == sum(profile(thread).instructions for thread in single)
    out = tmp_path / "split.folded"
    answer(capsys, "export", *bundles, "-F", "folded", "-o", out, "--cluster", scheduler, "--split-above", "0.001")
    export(single, "folded", tmp_path / "single.folded")
    assert out.read_bytes() == (tmp_path / "single.folded").read_bytes()


def test_a_piece_that_fails_fails_its_thread(scheduler):
    """A piece job's error (here: a recording that vanished after planning) is the thread's, named."""
    thread = api.open_bundle(TRACES / "basic").threads[0]
    jobs = [(0, 1027, None)]
    gone = Source("/nonexistent/bundle", run="gone")
    with distributed.Client(scheduler) as client, open(os.devnull, "w") as quiet:
        label, analysis = "basic (thread 1)", ProfileOf("function", None)
        outcome = analysed_here(client, gone, thread.pid, thread.tid, jobs, analysis, label, Progress(quiet))
    assert outcome.value is None and outcome.error.startswith("basic (thread 1), trace bytes 0..1027: ")


@pytest.mark.parametrize("form", ["folded", "speedscope", "chrome"])
def test_export_is_the_export_of_every_thread(capsys, tmp_path, scheduler, inputs, threads, form):
    batch, single = tmp_path / f"batch.{form}", tmp_path / f"single.{form}"
    out = answer(capsys, "export", *inputs, "--cluster", scheduler, "--format", form, "-o", batch)
    done = export(threads, form, single)
    assert batch.read_bytes() == single.read_bytes()
    assert out.strip() == done.summary().replace(str(single), str(batch))


def test_export_on_a_time_axis(capsys, tmp_path, scheduler):
    """The percpu bundle's four threads are timed in ns: the timeline's axis is time, from the earliest."""
    batch, single = tmp_path / "batch.json", tmp_path / "single.json"
    answer(capsys, "export", TRACES / "percpu", "--cluster", scheduler, "--format", "chrome", "-o", batch, "-m", "1us")
    export(api.open_bundle(TRACES / "percpu"), "chrome", single, min_duration="1us")
    assert batch.read_bytes() == single.read_bytes()
    assert json.loads(batch.read_text())["otherData"]["timeUnit"] == "ns"


def test_a_killed_worker_costs_a_retry(scheduler, tmp_path, threads):
    """The first job to run kills its worker process: the answers are the same."""
    marker = tmp_path / "killed"
    source = Source(str(TRACES / "threads"))
    jobs = [(source, thread.pid, thread.tid, ProfileOf("function", None), 1) for thread in threads[:4]]

    def dies_once(*job):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return on_thread(*job)
        os._exit(1)

    class Terminal:
        written: ClassVar[list[str]] = []

        def isatty(self):
            return True

        def write(self, text):
            self.written.append(text)

        def flush(self):
            pass

    progress = Progress(Terminal(), "test")
    with distributed.Client(scheduler) as client:
        values, failures = run_jobs(client, dies_once, jobs, ["job"] * 4, progress, False)
    assert not failures
    assert [value.rows for value in values] == [profile(thread).rows for thread in threads[:4]]
    assert marker.exists()
    assert "\rtest: 4/4 jobs done" in Terminal.written


def test_a_job_that_keeps_failing_names_its_recording(scheduler):
    def fails(_job):
        raise OSError("the storage went away")

    with (
        open(os.devnull, "w") as nowhere,
        distributed.Client(scheduler) as client,
        pytest.raises(JobFailedError, match=r"^rec: OSError: the storage went away$"),
    ):
        run_jobs(client, fails, [(1,)], ["rec"], Progress(nowhere), False)


@pytest.fixture
def corrupt(tmp_path):
    folder = tmp_path / "corrupt"
    folder.mkdir()
    (folder / "trace.json").write_text("{not json")
    return folder


def test_keep_going_names_what_it_left_out(capsys, scheduler, small, corrupt):
    status, out, err = run(capsys, "calls", corrupt, *small, "--cluster", scheduler, "--keep-going", "--json")
    assert status == 0
    assert json.loads(out)["missing"][0]["what"] == str(corrupt)
    assert f"warning: left out {corrupt}: " in err
    whole = json.loads(answer(capsys, "calls", *small, "--cluster", scheduler, "--json"))
    assert {**json.loads(out), "missing": []} == whole


BAD = {
    "missing": (["profile", "/no/such/trace"], "/no/such/trace: no such file or folder"),
    "ray": (["calls", TRACES / "static", "--cluster", "ray://head:10001"], "only Dask schedulers are supported"),
    "unreachable": (
        ["calls", TRACES / "static", "--cluster", "tcp://127.0.0.1:9", "--timeout", "1"],
        "no Dask scheduler answered at tcp://127.0.0.1:9 within 1 s",
    ),
    "not an address": (["calls", TRACES / "static", "--cluster", "head:8786"], "give a Dask scheduler's address"),
    "two searches": (["find", TRACES / "static", "-f", "main", "-a", "0x401000"], "give exactly one of"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_arguments_are_one_line_errors(capsys, case):
    argv, message = BAD[case]
    status, out, err = run(capsys, *argv)
    assert status == 1 and not out
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_a_corrupt_recording_fails_the_command_in_one_line(capsys, scheduler, corrupt):
    status, out, err = run(capsys, "profile", TRACES / "static", corrupt, "--cluster", scheduler)
    assert status == 1 and not out
    assert err.count("\n") == 1 and err.startswith(f"error: {corrupt}: ")


def test_folders_expand_to_their_recordings(tmp_path, perf_folder):
    found = recordings([str(HISTORY), str(perf_folder), str(HISTORY / "recursion")])
    bundles = sorted(path.parent for path in HISTORY.glob("*/trace.json"))
    assert [r.path for r in found] == [*map(str, bundles), str(perf_folder / "sample.perf.data")]
    assert found[0].name == str(HISTORY / bundles[0].name)
    (tmp_path / "empty" / "inside").mkdir(parents=True)
    with pytest.raises(InputError, match="empty: no recordings in this folder"):
        recordings([str(tmp_path / "empty")])
