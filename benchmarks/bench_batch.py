"""A batch profile of many recordings: one process, local worker processes, and a local Dask cluster (issue 30).

    .venv/bin/python benchmarks/bench_batch.py [--recordings 100] [--workers 1,2]

The recordings are copies of the 29M-instruction bundle (benchmarks/history.py;
each its own folder and trace file, the modules shared), so the batch is
RECORDINGS x 29M instructions and 1M calls.  Every case answers
``lldb-trace profile FOLDER --by module --json`` and the answers must be
equal; times are wall times of fresh processes:

- ``one process``: the API in a loop, no Dask (api.open_bundle + profile, merged);
- ``--workers N``: the command's local cluster of N worker processes;
- ``--cluster``: a cluster started beforehand (``dask scheduler`` and a
  ``dask worker`` of N processes on this machine), the command sent to it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import bench_scale
import history

LLDB_TRACE = Path(sys.executable).parent / "lldb-trace"
DASK = Path(sys.executable).parent / "dask"

_ONE_PROCESS = """
import json, sys
from pathlib import Path
from lldb_trace import api
from lldb_trace.batch.merge import merged_profile
from lldb_trace.profile import profile
made = [profile(thread, "module") for path in sorted(Path(sys.argv[1]).iterdir())
        for thread in api.open_bundle(path, workers=1).threads if thread.has_trace]
merged = merged_profile(made, "module")
print(json.dumps({row.name: [row.calls, row.exclusive, row.inclusive] for row in merged.rows}))
"""


def recordings(bundle, count):
    """A folder of ``count`` copies of ``bundle`` (made once, in benchmarks/out)."""
    out = bench_scale.OUT / f"batch-{count}"
    if out.is_dir() and len(list(out.iterdir())) == count:
        return out
    shutil.rmtree(out, ignore_errors=True)
    description = bench_scale.control_flow_only(bundle)
    trace = description["processes"][0]["threads"][0]["iptTrace"]
    for k in range(count):
        folder = out / f"rec-{k:03d}"
        (folder / "traces").mkdir(parents=True)
        shutil.copyfile(bundle / trace, folder / trace)
        (folder / "modules").symlink_to((bundle / "modules").resolve())
        (folder / "trace.json").write_text(json.dumps(description))
    return out


def timed(command, env=None):
    started = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{command[:3]} failed: {out.stderr[-500:]}")
    return time.perf_counter() - started, out.stdout


def rows_of(document):
    return {row["name"]: [row["calls"], row["exclusive"], row["inclusive"]] for row in json.loads(document)["rows"]}


def local_cluster(workers):
    """``(address, processes)`` of a scheduler and a worker of ``workers`` processes started here."""
    port = 8786 + os.getpid() % 1000
    scheduler = subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", "127.0.0.1:0"], stderr=subprocess.DEVNULL)  # fmt: skip
    address = f"tcp://127.0.0.1:{port}"
    worker = subprocess.Popen([DASK, "worker", address, "--nworkers", str(workers), "--nthreads", "1",
                               "--memory-limit", "0"], stderr=subprocess.DEVNULL)  # fmt: skip
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, (worker, scheduler)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(bench_scale.OUT / "history-29m"))
    parser.add_argument("--recordings", type=int, default=100)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args(argv)
    bundle = history.build_bundle(args.bundle)
    folder = recordings(bundle, args.recordings)
    command = [str(LLDB_TRACE), "profile", str(folder), "--by", "module", "--json", "-c", "0"]
    seconds, out = timed([sys.executable, "-c", _ONE_PROCESS, str(folder)])
    expected = json.loads(out)
    results = [("one process, the API in a loop (no Dask)", seconds)]
    for workers in map(int, args.workers.split(",")):
        seconds, out = timed([*command, "--workers", str(workers)])
        assert rows_of(out) == expected, "the local cluster's answer differs"
        results.append((f"lldb-trace profile --workers {workers} (its own local cluster)", seconds))
        address, processes = local_cluster(workers)
        try:
            seconds, out = timed([*command, "--cluster", address])
        finally:
            for process in processes:
                process.terminate()
                process.wait()
        assert rows_of(out) == expected, "the cluster's answer differs"
        results.append((f"lldb-trace profile --cluster (dask worker --nworkers {workers}, started before)", seconds))
    instructions = sum(row[1] for row in expected.values())
    print(f"{args.recordings} recordings, {instructions:,} instructions in all; cores here: {os.cpu_count()}\n")
    print("| profile by module of every recording | seconds | M instructions/s |")
    print("| --- | ---: | ---: |")
    for name, seconds in results:
        print(f"| {name} | {seconds:.1f} | {instructions / seconds / 1e6:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
