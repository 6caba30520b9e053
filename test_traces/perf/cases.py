"""perf.data test inputs, made from the committed bundles' genuine PT streams by lldb_trace's writer.

Each case is a perf.data written into a folder given by the caller (the files
name their binaries by absolute path, so they are made where they are used,
not committed).  ``python test_traces/perf/cases.py`` also captures Linux
perf's decode of each per-thread case (``perf script --itrace=i0nsZ -F
tid,ip``, Debian's linux-perf 6.1) into ``references.json``: per thread the
count and SHA-256 of perf's instruction addresses (all of them for
``snapshot``), the independent reference the tests compare the plugin's
decode with where perf is not installed.  ``Z`` (timeless decoding) because
perf 6.1 crashes (SIGSEGV) in its timed decoding of these files; per thread,
timeless decoding reads each thread's buffers in order, which is the whole
decode.  perf's timeless decoding cannot split a per-cpu trace among threads,
so ``percpu`` has no perf reference: its threads are checked against the same
trace loaded from its JSON bundle.

- ``basic``: one thread through the program, libc and ld.so (per thread);
- ``threads``: four threads (per thread);
- ``timestamps``: TSC packets and a TSC conversion (per thread);
- ``cycles``: TSC, MTC and CYC packets (cycle-accurate, per thread); its
  reference also keeps the distinct times of perf's *timed* decode
  (``--itrace=i0ns -F tid,time --ns``), which works for these streams;
- ``percpu``: per-cpu AUX areas split by cpu-wide context switch records;
- ``truncated``: basic's trace in two AUX buffers, the first flagged
  TRUNCATED, the bytes between lost, the second starting at a PSB;
- ``snapshot``: basic's trace as three snapshots (``perf record -S``): the
  second overlaps the first, the third starts after bytes nobody saved.
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from lldb_trace.bundle.saver import SaveModule, SaveProcess, SaveThread  # noqa: E402
from lldb_trace.decode.parallel import psb_offsets  # noqa: E402
from lldb_trace.perf_data import cpu_streams, perf_data_bytes  # noqa: E402
from lldb_trace.perf_data.aux_streams import Break  # noqa: E402
from lldb_trace.process_trace import ProcessTrace  # noqa: E402
from lldb_trace.trace_files import load_trace  # noqa: E402

CASES = ("basic", "threads", "timestamps", "cycles", "percpu", "truncated", "snapshot")
SOURCES = {"truncated": "basic", "snapshot": "basic"}


def source_bundle(case):
    return ROOT / "test_traces" / SOURCES.get(case, case) / "trace.json"


def make(case, folder):
    """Write ``folder/<case>.perf.data``; returns its path."""
    bundle = load_trace(source_bundle(case))
    process = bundle.processes[0]
    trace = ProcessTrace(bundle, process)
    modules = tuple(SaveModule(m.system_path, m.path, m.load_address, m.build_id or m.uuid) for m in process.modules)
    if bundle.cpus:
        threads = tuple(SaveThread(tid, None) for tid in trace.tids)
        data = perf_data_bytes(SaveProcess(process.pid, process.triple, threads, modules), bundle.cpu,
                               bundle.tsc_conversion, cpu_streams(bundle))  # fmt: skip
    else:
        raw = {tid: bytes(trace.trace_bytes(tid)) for tid in trace.tids}
        snapshots = None
        if case == "truncated":
            raw, breaks = _truncated(raw)
        if case == "snapshot":
            snapshots = _snapshots(raw)
        threads = tuple(SaveThread(tid, raw[tid], None, breaks if case == "truncated" else ()) for tid in trace.tids)
        data = perf_data_bytes(SaveProcess(process.pid, process.triple, threads, modules), bundle.cpu,
                               bundle.tsc_conversion, snapshots=snapshots)  # fmt: skip
    path = Path(folder) / f"{case}.perf.data"
    path.write_bytes(data)
    return path


def cut_points(data):
    """Where the truncated case loses bytes: mid-way through the second PSB period, up to the third PSB."""
    psbs = psb_offsets(data)
    return psbs[1] + 40, psbs[2]


def _truncated(raw):
    ((tid, data),) = raw.items()
    lost_from, resumes_at = cut_points(data)
    return {tid: data[:lost_from] + data[resumes_at:]}, (Break(lost_from, "lost"),)


def snapshot_pieces(data):
    """``[(offset, bytes)]``: three snapshots of the AUX stream, the second overlapping the first."""
    psbs = psb_offsets(data)
    first_end = psbs[1] + 100
    second = (psbs[1] + 20, psbs[2] + 30)
    third = psbs[3] - 5
    return [(0, data[:first_end]), (second[0], data[second[0] : second[1]]), (third, data[third:])]


def _snapshots(raw):
    ((tid, data),) = raw.items()
    return {tid: snapshot_pieces(data)}


def perf_script(path):
    """``{tid: [ip]}`` as Linux perf decodes ``path`` (timeless), or None when perf is not installed."""
    try:
        done = subprocess.run(
            ["perf", "script", "-f", "-i", str(path), "--itrace=i0nsZ", "-F", "tid,ip"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return None
    found = {}
    for line in done.stdout.splitlines():
        tid, ip = line.split()
        found.setdefault(int(tid), []).append(int(ip, 16))
    return found


def perf_times(path):
    """``{tid: sorted distinct ns}`` of perf's timed decode of ``path``."""
    done = subprocess.run(
        ["perf", "script", "-f", "-i", str(path), "--itrace=i0ns", "-F", "tid,time", "--ns"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    found = {}
    for line in done.stdout.splitlines():
        tid, time = line.split()
        found.setdefault(int(tid), set()).add(int(time.rstrip(":").replace(".", "")))
    return {tid: sorted(times) for tid, times in found.items()}


REFERENCES = HERE / "references.json"
PERF_CASES = tuple(case for case in CASES if case != "percpu")


def digest(ips):
    return hashlib.sha256(",".join(f"{ip:x}" for ip in ips).encode()).hexdigest()


def summary(found, case):
    """What references.json keeps of perf's decode: per tid the count and digest (and the addresses)."""
    kept = {}
    for tid, ips in sorted(found.items()):
        kept[str(tid)] = {"count": len(ips), "sha256": digest(ips)}
        if case == "snapshot":
            kept[str(tid)]["ips"] = [f"{ip:x}" for ip in ips]
    return kept


def read_references():
    return json.loads(REFERENCES.read_text())


def main():
    import tempfile

    references = {}
    with tempfile.TemporaryDirectory() as folder:
        for case in PERF_CASES:
            path = make(case, folder)
            references[case] = summary(perf_script(path), case)
            if case == "cycles":
                for tid, times in perf_times(path).items():
                    references[case][str(tid)]["times"] = times
            print(case, {tid: reference["count"] for tid, reference in references[case].items()})
    REFERENCES.write_text(json.dumps(references, indent=1) + "\n")


if __name__ == "__main__":
    main()
