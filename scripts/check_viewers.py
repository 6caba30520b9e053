"""Open pt export's files in real viewers and check what they show against the recorder's ground truth.

speedscope (its npm release, served on localhost) runs in headless Chromium:
its sandwich view lists every function with its self weight, read back from
the page, and a screenshot of its flame chart is kept.  The Perfetto trace
is read back with Perfetto's own protos.  Expected numbers come from
tests/support/ground_truth_counts.py (single-stepped addresses), not from
lldb_trace.  The script installs nothing; set the viewers up with:

    apt-get install -y chromium                           # /usr/bin/chromium
    npm install --prefix /work/tools speedscope           # outside the repository

then run (it writes the screenshots and check_viewers.log into --out):

    .venv/bin/python scripts/check_viewers.py [--speedscope DIR] [--chromium PATH] [--out tests/viewer_checks]
"""

import argparse
import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.ground_truth_counts import function_table, ground_truth_counts  # noqa: E402

from lldb_trace import api  # noqa: E402
from lldb_trace.export import export  # noqa: E402
from lldb_trace.export.perfetto import protos  # noqa: E402

BASIC, TID, PROGRAM = ROOT / "test_traces" / "basic", 5662, "basic"
TIMED = ROOT / "test_traces" / "cycles"  # cycle-accurate timing: a time at nearly every branch
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
]  # fmt: skip
TALL = "--window-size=1600,8000"
ROW = re.compile(
    r"<tr[^>]*><td[^>]*>([^<]*)<div.*?</td><td[^>]*>([^<]*)<div.*?</td><td[^>]*>(?:<span[^>]*></span>)?([^<]*)</td></tr>"
)
CONSOLE = re.compile(r':CONSOLE:\d+\] "(.*)", source:')


class Checks:
    """Results, printed and logged as they come."""

    def __init__(self, log):
        self.log, self.failed, self.passed = log, 0, 0

    def say(self, line):
        print(line)
        self.log.append(line)

    def check(self, ok, what, detail=""):
        self.passed += bool(ok)
        self.failed += not ok
        self.say(f"{'ok  ' if ok else 'FAIL'} {what}{f': {detail}' if detail and not ok else ''}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speedscope", type=Path, default=Path("/work/tools/node_modules/speedscope"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "viewer_checks")
    options = parser.parse_args()
    release = options.speedscope / "dist" / "release"
    if not (release / "index.html").exists() or not shutil.which(options.chromium):
        sys.exit(f"needs speedscope in {options.speedscope} and {options.chromium}: see this script's docstring")
    options.out.mkdir(parents=True, exist_ok=True)
    checks = Checks([])
    version = subprocess.run([options.chromium, "--version"], capture_output=True, text=True).stdout.strip()
    speedscope_version = json.loads((options.speedscope / "package.json").read_text())["version"]
    checks.say(f"viewers: speedscope {speedscope_version} (npm) in {version}, headless")
    with tempfile.TemporaryDirectory() as served:
        served = Path(served)
        shutil.copytree(release, served, dirs_exist_ok=True)
        thread = api.open_bundle(BASIC).thread(TID)
        files = {
            "speedscope": served / "basic.speedscope.json",
            "folded": served / "basic.folded",
            "chrome": served / "basic.trace.json",  # speedscope reads '*.chrome.json' as a CPU profile, by name
            "perfetto": served / "basic.pftrace",
        }
        for format, path in files.items():
            checks.say(f"$ pt export --format {format} {path.name}   # test_traces/basic, thread {TID}")
            checks.say("  " + export(thread, format, path).summary().replace(str(path), path.name))
        timed = served / "cycles.trace.json"
        export(api.open_bundle(TIMED).threads[0], "chrome", timed)
        export(api.open_bundle(TIMED).threads[0], "speedscope", served / "cycles.speedscope.json")
        with _server(served) as url:
            check_all(checks, options, url, files, served)
    (options.out / "check_viewers.log").write_text("\n".join(checks.log) + "\n")
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


def check_all(checks, options, url, files, served):
    truth = ground_truth_counts(BASIC, TID)
    start = function_table(BASIC).name_at(truth_first_address())[0]
    sized = {name for name in function_table(BASIC).names if name.startswith(f"{PROGRAM}`")}
    exclusive = {name: count for name, count in truth.exclusive.items() if name in sized and count}
    calls = Counter({name: count for name, count in truth.calls.items() if name in sized and count})
    calls[start] += 1  # the recording starts inside main: a call no call instruction opened
    checks.say(f"ground truth ({PROGRAM}'s own functions): self instructions {dict(sorted(exclusive.items()))}")
    checks.say(f"ground truth calls {dict(sorted(calls.items()))}")

    schema = json.loads((options.speedscope / "dist" / "release" / "file-format-schema.json").read_text())
    for path in (files["speedscope"], served / "cycles.speedscope.json"):
        errors = list(jsonschema.Draft7Validator(schema).iter_errors(json.loads(path.read_text())))
        checks.check(not errors, f"{path.name} is valid against speedscope's file-format-schema.json", errors[:1])

    for format in ("speedscope", "folded"):
        rows, console = _open(options.chromium, url, files[format].name, "sandwich")
        shown = {name: int(self_.split()[0].replace(",", "")) for _total, self_, name in rows if name in sized}
        checks.check(shown == exclusive, f"speedscope's sandwich view of the {format} export: self = ground truth",
                     f"shown {shown}, console {console}")  # fmt: skip
    rows, console = _open(options.chromium, url, files["chrome"].name, "sandwich")
    per_call = Counter(name.split(" {")[0] for _total, _self, name in rows)  # it keys a frame by name and args
    shown = {name: count for name, count in per_call.items() if name in sized}
    warnings = [line for line in console if "Tried to end" in line or "still open" in line]
    checks.check(shown == calls and not warnings, "speedscope reads the Chrome JSON: one slice per call, well nested",
                 f"shown {shown}, warnings {warnings[:2]}")  # fmt: skip
    rows, console = _open(options.chromium, url, "cycles.speedscope.json", "sandwich")
    trouble = [line for line in console if "Tried to end" in line or "went wrong" in line or "Failed" in line]
    checks.check(rows and not trouble, "speedscope opens the timed speedscope export", trouble[:2])
    rows, console = _open(options.chromium, url, "cycles.trace.json", "sandwich")
    checks.check(rows, "speedscope opens the timed Chrome JSON")
    timed = served / "cycles.trace.json"
    events = json.loads(timed.read_text())["traceEvents"]
    lasting = [event for event in events if event["ph"] != "X" or event["dur"] > 0]
    (served / "lasting.trace.json").write_text(json.dumps({**json.loads(timed.read_text()), "traceEvents": lasting}))
    _rows, console_lasting = _open(options.chromium, url, "lasting.trace.json", "sandwich")
    checks.say(
        f"note: {len(events) - len(lasting)} of its calls last 0 ns (shorter than the trace's timestamp"
        f" resolution); speedscope's Trace Event importer warns {sum('Tried to end' in x for x in console)} times"
        f" about them, and {sum('Tried to end' in x for x in console_lasting)} times once they are removed: those"
        " are calls that end on their caller's last nanosecond, which speedscope's float sum ts + dur can put past"
        " the caller's end (the file's decimals nest exactly). Its own format (--format speedscope) opens cleanly."
    )

    shots = [("basic", files["speedscope"].name, "time-ordered"), ("basic", files["speedscope"].name, "sandwich"),
             ("cycles", "cycles.speedscope.json", "time-ordered")]  # fmt: skip
    for name, served_name, view in shots:
        png = options.out / f"speedscope_{name}_{view}.png"
        _open(options.chromium, url, served_name, view, screenshot=png)
        checks.check(png.exists() and png.stat().st_size > 10_000, f"screenshot {png.relative_to(ROOT)}")

    trace = protos().Trace()
    trace.ParseFromString(files["perfetto"].read_bytes())
    names, begun, ended = {}, Counter(), 0
    for packet in trace.packet:
        names.update({interned.iid: interned.name for interned in packet.interned_data.event_names})
        if packet.track_event.type == packet.track_event.TYPE_SLICE_BEGIN:
            begun[names[packet.track_event.name_iid]] += 1
        ended += packet.track_event.type == packet.track_event.TYPE_SLICE_END
    shown = {name: count for name, count in begun.items() if name in sized}
    checks.check(shown == calls and ended == sum(begun.values()),
                 f"perfetto_trace_pb2.Trace reads {len(trace.packet)} packets: a slice per call", shown)  # fmt: skip


def truth_first_address():
    from lldb_trace.capture.encoder.ground_truth import GroundTruth

    return GroundTruth.read(BASIC / "ground_truth" / f"{TID}.txt").addresses[0]


def _open(chromium, url, name, view, screenshot=None):
    """Load ``name`` in speedscope's ``view``: the sandwich table's rows (total, self, name) and the console.

    Headless Chromium now and then writes the page before speedscope has drawn its table: such a load is tried
    again, up to three times.
    """
    for _attempt in range(3):
        rows, console = _load(chromium, url, name, view, screenshot)
        if rows or screenshot or view != "sandwich":
            break
    return rows, console


def _load(chromium, url, name, view, screenshot):
    with tempfile.TemporaryDirectory() as profile_dir:
        page = f"{url}/index.html#profileURL={url}/{name}&view={view}"
        # the sandwich table only puts its visible rows in the page: a tall window shows them all
        action = [f"--screenshot={screenshot}", "--window-size=1600,900"] if screenshot else ["--dump-dom", TALL]
        run = subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", *action, page],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    rows = [(total, self_, html.unescape(label)) for total, self_, label in ROW.findall(run.stdout)]
    return rows, CONSOLE.findall(run.stderr)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _server:
    """speedscope and the exports on http://127.0.0.1:PORT while in the ``with`` block."""

    def __init__(self, folder):
        handler = functools.partial(_Quiet, directory=str(folder))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    main()
