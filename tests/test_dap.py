"""``lldb-trace dap``, message by message: a DAP client (support/dap_client.py) drives the server over stdio.

The sessions are the README's bug hunt on the committed gradebook recording (a crash whose cause is
found by going back), and the crash recording without a core (values not known in the past).  Thread
ids are read from the server, never written here.
"""

import io
import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.dap_client import HANG_GUARD, DapClient
from support.lldb22 import needs_lldb_22
from support.native_lldb import NATIVE_PYTHON_PATH, PYTHON
from support.paths import HISTORY, SOURCES, TRACES

from lldb_trace.dap.server import Server

pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

GRADEBOOK = HISTORY / "gradebook" / "trace.json"
CRASH = TRACES / "crash" / "trace.json"
GRADEBOOK_C = str(SOURCES / "gradebook.c")  # the client's copy: where it was built may differ


@pytest.fixture
def client():
    clients = []

    def start(trace=GRADEBOOK, **launch):
        made = DapClient()
        clients.append(made)
        made.first_stop = made.start(trace, **launch)
        made.tid = made.ok("threads")["threads"][0]["id"]
        made.take_events("output")  # what loading printed
        return made

    yield start
    for made in clients:
        assert made.close() == 0, made.stderr.decode(errors="replace")
        assert b"Traceback" not in made.stderr


def frames(client):
    return client.ok("stackTrace", {"threadId": client.tid})["stackFrames"]


def where(client):
    """``(function, line)`` of frame 0."""
    top = frames(client)[0]
    return top["name"], top["line"]


def position(stopped):
    """The instruction index a ``stopped`` event names (None at the end of history)."""
    found = re.search(r"instruction (\d+) of", stopped["description"])
    return int(found.group(1)) if found else None


def move(client, request, **arguments):
    """Send a movement; the ``stopped`` event after its empty response."""
    client.ok(request, {"threadId": client.tid, **arguments})
    return client.event("stopped")


def locals_of(client, frame=0):
    """Frame ``frame``'s scopes as {scope name: {variable name: variable}}."""
    found = {}
    for scope in client.ok("scopes", {"frameId": frames(client)[frame]["id"]})["scopes"]:
        listed = client.ok("variables", {"variablesReference": scope["variablesReference"]})["variables"]
        found[scope["name"]] = {variable["name"]: variable for variable in listed}
    return found


def watch(client, expression):
    return client.ok("evaluate", {"expression": expression, "context": "watch", "frameId": frames(client)[0]["id"]})


def test_the_bug_hunt_goes_back_to_the_write(client):
    """The README's walkthrough: the crash, the overwritten pointer, the watchpoint hit going back, the bug."""
    gradebook = client()
    assert gradebook.first_stop["reason"] == "exception" and "SIGSEGV" in gradebook.first_stop["description"]
    top = frames(gradebook)[0]
    assert (top["name"], top["source"]["name"], top["line"]) == ("credits_earned", "gradebook.c", 39)
    student = locals_of(gradebook)["Locals"]["student"]
    fields = gradebook.ok("variables", {"variablesReference": student["variablesReference"]})["variables"]
    shown = {field["name"]: field["value"] for field in fields}
    assert shown["course"] == "0x0000000000000006" and shown["count"] == "5" and '"Ada"' in shown["name"]
    marks = gradebook.ok("variables", {"variablesReference": fields[1]["variablesReference"], "filter": "indexed"})
    assert [mark["name"] for mark in marks["variables"]] == ["[0]", "[1]", "[2]", "[3]"]
    named = gradebook.ok("variables", {"variablesReference": student["variablesReference"], "filter": "named"})
    assert [field["name"] for field in named["variables"]] == ["name", "marks", "course", "count"]
    assert not gradebook.ok("variables", {"variablesReference": student["variablesReference"], "filter": "indexed"})[
        "variables"
    ]

    console = gradebook.ok(
        "evaluate", {"expression": "watchpoint set expression -s 8 -- &student->course", "context": "repl"}
    )
    assert "Watchpoint created" in console["result"]
    stopped = move(gradebook, "reverseContinue")
    assert stopped["reason"] == "data breakpoint" and position(stopped) == 174
    assert where(gradebook) == ("add_mark", 24)
    assert watch(gradebook, "student->count")["result"] == "4"
    gradebook.ok("evaluate", {"expression": "watchpoint delete 1", "context": "repl"})

    assert position(move(gradebook, "stepBack")) == 168 and where(gradebook) == ("add_mark", 23)
    assert position(move(gradebook, "stepBack")) == 164 and where(gradebook) == ("add_mark", 21)
    assert watch(gradebook, "student->count")["result"] == "4"  # a full array passes the check


def test_breakpoints_stop_continue_both_ways(client):
    gradebook = client()
    set_lines = gradebook.ok("setBreakpoints", {"source": {"path": GRADEBOOK_C}, "breakpoints": [{"line": 23}]})
    (breakpoint,) = set_lines["breakpoints"]
    assert breakpoint["verified"] and breakpoint["line"] == 23

    stopped = move(gradebook, "reverseContinue")  # the fifth call: the write past the end
    assert stopped["reason"] == "breakpoint" and stopped["hitBreakpointIds"] == [breakpoint["id"]]
    assert position(stopped) == 168 and where(gradebook) == ("add_mark", 23)
    assert position(move(gradebook, "reverseContinue")) == 134
    assert position(move(gradebook, "continue")) == 168
    stopped = move(gradebook, "continue")  # no hit after the last one: the end of history
    assert stopped["reason"] == "history boundary" and stopped["text"] == "No more reverse-execution history."
    assert where(gradebook) == ("credits_earned", 39)

    assert gradebook.ok("setBreakpoints", {"source": {"path": GRADEBOOK_C}, "breakpoints": []}) == {"breakpoints": []}
    stopped = move(gradebook, "reverseContinue")
    assert stopped["reason"] == "history boundary" and position(stopped) == 0

    named = gradebook.ok(
        "setFunctionBreakpoints",
        {"breakpoints": [{"name": "average"}, {"name": "no_such_function"}, {"name": "add_mark", "condition": "1"}]},
    )["breakpoints"]
    assert named[0]["verified"] and named[0]["line"] == 29
    assert not named[1]["verified"] and "no function named 'no_such_function'" in named[1]["message"]
    assert not named[2]["verified"] and "condition not supported" in named[2]["message"]
    stopped = move(gradebook, "continue")
    assert stopped["reason"] == "breakpoint" and stopped["hitBreakpointIds"] == [named[0]["id"]]
    assert where(gradebook) == ("average", 29)

    missing = gradebook.ok("setBreakpoints", {"source": {"path": GRADEBOOK_C}, "breakpoints": [{"line": 900}]})
    assert (
        not missing["breakpoints"][0]["verified"]
        and "no code for gradebook.c:900" in missing["breakpoints"][0]["message"]
    )


def test_goto_targets_are_the_executions_of_a_line(client):
    gradebook = client()
    targets = gradebook.ok("gotoTargets", {"source": {"path": GRADEBOOK_C}, "line": 23})["targets"]
    assert [target["id"] for target in targets] == [168, 134, 100, 66, 32]  # newest first, as pt find lists them
    assert all("add_mark" in target["label"] and target["line"] == 23 for target in targets)

    stopped = move(gradebook, "goto", targetId=targets[-1]["id"])  # the first call: nothing counted yet
    assert stopped["reason"] == "goto" and position(stopped) == 32
    assert where(gradebook) == ("add_mark", 23) and watch(gradebook, "student->count")["result"] == "0"
    assert position(move(gradebook, "next")) == 38 and where(gradebook) == ("add_mark", 24)
    assert position(move(gradebook, "stepOut")) == 46 and where(gradebook) == ("main", 50)  # at the return address
    assert position(move(gradebook, "stepIn")) == 49 and where(gradebook) == ("main", 51)
    assert position(move(gradebook, "stepIn")) == 62 and where(gradebook) == ("add_mark", 21)  # the second call

    assert "no code for" in gradebook.error("gotoTargets", {"source": {"path": GRADEBOOK_C}, "line": 900})
    assert "out of range" in gradebook.error("goto", {"threadId": gradebook.tid, "targetId": 10**6})


def test_history_boundaries_and_instruction_steps(client):
    gradebook = client()
    console = gradebook.ok("evaluate", {"expression": "pt goto begin", "context": "repl"})
    assert "Position: instruction 0 of 274." in console["result"]
    assert position(gradebook.event("stopped")) == 0  # a console command that moves is a stop too
    for granularity in ("statement", "instruction"):
        stopped = move(gradebook, "stepBack", granularity=granularity)
        assert stopped["reason"] == "history boundary" and position(stopped) == 0
        assert "No more reverse-execution history." in gradebook.event("output")["output"]
    assert position(move(gradebook, "next", granularity="instruction")) == 1
    assert position(move(gradebook, "stepIn", granularity="instruction")) == 2
    assert position(move(gradebook, "stepBack", granularity="instruction")) == 1
    assert "granularity must be one of" in gradebook.error("next", {"threadId": gradebook.tid, "granularity": "x"})


def test_past_values_not_known_say_so(client):
    """The crash recording has no core: in the past, the pc is known and the rest is said to be unknown."""
    crash = client(CRASH)
    assert position(move(crash, "goto", targetId=2700)) == 2700
    shown = locals_of(crash)
    assert shown["Statics"]["pointer"]["value"] == "<not known at this position (memory at 0x404020)>"
    assert shown["Locals"]["n"]["value"].startswith("<unavailable: ")
    assert "rsp" in shown["Registers"]["not known at this position"]["value"]
    assert "(no registers)" in locals_of(crash, frame=1)["Registers"]  # an outer frame of the trace's calls
    error = crash.error("evaluate", {"expression": "pointer", "context": "watch", "frameId": frames(crash)[0]["id"]})
    assert error.startswith("pointer is not known at this position (it needs 0x404020")
    assert watch(crash, "&pointer")["result"] == "(int *volatile *) 0x0000000000404020"


def test_a_perf_data_loads_with_its_core_and_search_path(client, session, tmp_path):
    """``launch`` passes ``core`` and ``searchPaths`` on as ``trace load`` takes them."""
    session.ok("trace load " + str(GRADEBOOK))
    session.ok(f"trace save --format perf {tmp_path / 'gradebook.data'}")
    recorded = HISTORY / "gradebook"
    perf = client(
        tmp_path / "gradebook.data", core=str(recorded / "cores" / "end.core"), searchPaths=[str(recorded / "modules")]
    )
    assert "SIGSEGV" in perf.first_stop["description"] and where(perf) == ("credits_earned", 39)
    assert position(move(perf, "stepBack")) == 272 and watch(perf, "student->course")["result"] == "0x0000000000000006"


def test_code_without_source_and_disassembly(client):
    gradebook = client()
    outer = frames(gradebook)[-1]  # _start: no line information
    listing = gradebook.ok("source", {"source": outer["source"], "sourceReference": outer["source"]["sourceReference"]})
    line = listing["content"].splitlines()[outer["line"] - 1]
    assert line.startswith(outer["instructionPointerReference"]) or "call" in line

    pc = frames(gradebook)[0]["instructionPointerReference"]
    asked = {"memoryReference": pc, "instructionOffset": -3, "instructionCount": 8}
    shown = gradebook.ok("disassemble", asked)["instructions"]
    assert len(shown) == 8 and shown[3]["address"] == pc and shown[3]["symbol"] == "gradebook`credits_earned"
    addresses = [int(item["address"], 16) for item in shown]
    assert addresses == sorted(addresses) and shown[3]["line"] == 39
    nowhere = gradebook.ok("disassemble", {"memoryReference": "0x10", "instructionCount": 4})["instructions"]
    assert len(nowhere) == 4 and all(item["presentationHint"] == "invalid" for item in nowhere)
    assert "memoryReference must be an address" in gradebook.error("disassemble", {**asked, "memoryReference": "pc"})
    assert "names no source" in gradebook.error("source", {"sourceReference": 999})


def test_source_by_path_reads_only_the_frames_files(client):
    """The server reads only the files the trace names: a frame's source file by its path, nothing else."""
    gradebook = client()
    named = frames(gradebook)[0]["source"]["path"]
    assert "credits_earned" in gradebook.ok("source", {"source": {"path": named}})["content"]
    for path in ("/etc/passwd", str(SOURCES / "recursion.c"), "gradebook.c"):
        assert "no source file of a frame this session showed" in gradebook.error("source", {"source": {"path": path}})


def test_the_console_runs_lldb_and_pt_commands(client):
    gradebook = client()
    found = gradebook.ok("evaluate", {"expression": "pt find --line gradebook.c:23 -c 2", "context": "repl"})
    assert "168" in found["result"] and "134" in found["result"]
    assert not gradebook.take_events("stopped")  # nothing moved
    assert gradebook.ok("evaluate", {"expression": "student->count", "context": "repl"})["result"] == "5"
    assert gradebook.ok("evaluate", {"expression": "script print(1+1)", "context": "repl"})["result"] == "2"
    assert "undeclared identifier 'n'" in gradebook.error("evaluate", {"expression": "n"})  # no context: no next
    assert not gradebook.take_events("stopped")
    error = gradebook.error("evaluate", {"expression": "`no-such-command", "context": "repl"})
    assert "\n" not in error and "no-such-command" in error
    gradebook.ok("evaluate", {"expression": "pt reverse-step", "context": "repl"})
    assert gradebook.event("stopped")["threadId"] == gradebook.tid
    assert gradebook.ok("evaluate", {"expression": "quit", "context": "repl"}) == {
        "result": "",
        "variablesReference": 0,
    }
    gradebook.event("terminated")


def test_requests_before_launch_and_bad_requests_are_error_responses():
    with_client = DapClient()
    try:
        capabilities = with_client.ok("initialize", {"adapterID": "test", "supportsProgressReporting": True})
        for name in (
            "supportsStepBack",
            "supportsGotoTargetsRequest",
            "supportsDisassembleRequest",
            "supportsConfigurationDoneRequest",
        ):
            assert capabilities[name] is True
        assert with_client.ok("threads") == {"threads": []}
        assert "no trace loaded yet" in with_client.error("stackTrace", {"threadId": 1})
        assert "trace is missing" in with_client.error("launch", {})
        assert "trace must be a string" in with_client.error("launch", {"trace": 7})
        assert "no-such-bundle" in with_client.error("launch", {"trace": "/no-such-bundle.json"})
        with_client.ok("launch", {"trace": str(GRADEBOOK)})
        started = with_client.event("progressStart")  # LLDB's progress (the plugin's decoding among it) is shown
        assert started["progressId"] == with_client.event("progressEnd")["progressId"]
        with_client.ok("configurationDone")
        tid = with_client.event("stopped")["threadId"]
        for command, arguments, says in (
            ("fooBar", {}, "unknown request 'fooBar'"),
            ("stackTrace", {"threadId": "main"}, "threadId must be an integer, not a string ('main')"),
            ("stackTrace", {"threadId": -4}, "threadId must be from 0"),
            ("stackTrace", {"threadId": 10**40}, "threadId must be from 0"),
            ("stackTrace", {"threadId": 7}, f"no thread 7 in the trace (its threads: {tid})"),
            ("variables", {"variablesReference": 424242}, "variablesReference 424242 is not known here"),
            ("scopes", {"frameId": True}, "frameId must be an integer, not a boolean"),
            ("evaluate", {"expression": "\ud800", "context": "watch"}, "lone surrogate"),
            # LLDB's parsers recurse once an operator: 10,000 of them overflowed its stack and killed the server
            ("evaluate", {"expression": "1+" * 10000 + "1", "context": "hover"}, "at most 4096 are evaluated"),
            ("setBreakpoints", {"source": {"path": "x.c"}, "breakpoints": [{"line": 2**32}]}, "from 1 to 2147483647"),
            ("gotoTargets", {"source": {"path": "x.c"}, "line": 2**32 + 1}, "line must be from 1 to 2147483647"),
            ("setBreakpoints", {"source": {"path": "x.c"}, "breakpoints": {"line": 3}}, "breakpoints must be a list"),
            ("launch", {"trace": str(GRADEBOOK)}, "a trace is loaded already"),
            ("setExceptionBreakpoints", {"filters": ["all"]}, "no exception breakpoints"),
            (
                "variables",
                {"variablesReference": 1, "filter": "both"},
                "filter must be 'indexed' or 'named', not 'both'",
            ),
        ):
            assert says in with_client.error(command, arguments), command
        scopes = with_client.ok("scopes", {"frameId": frames_of(with_client, tid)[0]["id"]})["scopes"]
        assert "is not known here" in with_client.error("scopes", {"frameId": scopes[0]["variablesReference"]})

        for message, says in (
            ({"type": "request", "command": "threads"}, "a request needs an integer 'seq'"),
            ({"seq": 90, "type": "query", "command": "threads"}, "type must be 'request'"),
            ({"seq": 91, "type": "request", "command": "threads", "arguments": [1]}, "must be a JSON object"),
        ):
            with_client.send(message)
            answer = with_client.response(message.get("seq", 0))
            assert not answer["success"] and says in answer["message"]
        with_client.send({"seq": 92, "type": "event", "event": "whatever"})  # a client's event: ignored
        with_client.send_bytes(b"Content-Length: 5\r\n\r\n[1,2]")
        assert "malformed message: the body is a JSON list" in with_client.response(0)["message"]

        with_client.send({"seq": 93, "type": "request", "command": "stepBack", "arguments": {"threadId": tid}})
        with_client.send({"seq": 94, "type": "request", "command": "cancel", "arguments": {"requestId": 93}})
        for seq in (93, 94):  # the step may be done or cancelled: both are answered
            with_client.response(seq)
        with_client.take_events("stopped")
        with_client.ok("pause", {"threadId": tid})
        assert with_client.event("stopped")["reason"] == "pause"
        assert with_client.ok("threads")["threads"][0]["id"] == tid
    finally:
        assert with_client.close() == 0
    assert b"Traceback" not in with_client.stderr


def frames_of(with_client, tid):
    return with_client.ok("stackTrace", {"threadId": tid})["stackFrames"]


def lldb_trace_dap():
    """The ``lldb-trace dap`` console script beside this Python."""
    script = Path(sys.executable).parent / "lldb-trace"
    if not script.exists():
        pytest.skip("no lldb-trace console script beside this Python (pip install -e .)")
    return [str(script), "dap"]


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        (b"Content-Length: twelve\r\n\r\n{}", "Content-Length must be a byte count, not 'twelve'"),
        (b"Content-Length: 99999999999\r\n\r\n", "is over the limit of"),
        (b"\x00\xffGARBAGE\x7f\r\n\r\n", "a message header line is not 'Name: value'"),
        (b"X-Long: " + b"y" * 9000 + b"\r\n", "a message header is longer than 8192 bytes"),
        (b'Content-Length: 80\r\n\r\n{"seq": 1, "type": "requ', "closed the connection in the middle of a message"),
    ],
    ids=["bad-length", "huge-length", "binary-junk", "long-header", "disconnect-mid-message"],
)
def test_a_broken_stream_closes_the_connection(sent, says):
    """The server's loop (in this process: LLDB starts only for a request) tells the client why, and stops."""
    written = io.BytesIO()
    problem = Server(io.BytesIO(sent), written).serve()
    assert says in problem and "\n" not in problem
    event = json.loads(written.getvalue().partition(b"\r\n\r\n")[2])
    assert event["event"] == "output" and event["body"]["category"] == "important" and says in event["body"]["output"]


def test_the_console_script_says_why_it_closes_in_one_line():
    done = subprocess.run(
        lldb_trace_dap(), input=b"Content-Length: -3\r\n\r\n", capture_output=True, timeout=HANG_GUARD
    )
    said = done.stderr.decode()
    assert done.returncode == 1 and said == "error: Content-Length must be a byte count, not '-3'\n"


def test_the_console_script_serves_and_says_what_it_is():
    described = subprocess.run([*lldb_trace_dap(), "--help"], capture_output=True, text=True, timeout=HANG_GUARD)
    assert described.returncode == 0 and "Debug Adapter Protocol" in described.stdout
    request = json.dumps({"seq": 1, "type": "request", "command": "initialize", "arguments": {}}).encode()
    framed = b"Content-Length: %d\r\n\r\n" % len(request) + request
    done = subprocess.run(lldb_trace_dap(), input=framed, capture_output=True, timeout=HANG_GUARD)
    assert done.returncode == 0 and not done.stderr  # the client left without a word: a clean end
    assert json.loads(done.stdout.partition(b"\r\n\r\n")[2])["body"]["supportsStepBack"] is True


@needs_lldb_22
def test_the_server_runs_in_debian_lldb_22():
    """The same server under /usr/bin/python3 with lldb-22's bindings first, this venv's packages after them."""
    version = subprocess.run([PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if NATIVE_PYTHON_PATH is None or version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip("no lldb-22 Python bindings for a Python of this venv's version")
    packages = sysconfig.get_paths()["purelib"]
    code = (
        f"import site, sys; sys.path.insert(0, {NATIVE_PYTHON_PATH!r}); site.addsitedir({packages!r}); "
        "from lldb_trace.dap import main; sys.exit(main([]))"
    )
    old = DapClient([PYTHON, "-s", "-c", code])
    try:
        old.start(GRADEBOOK)
        said = old.ok("evaluate", {"expression": "version", "context": "repl"})["result"]
        assert said.startswith("lldb version 22"), said
        old.tid = old.ok("threads")["threads"][0]["id"]
        old.ok("evaluate", {"expression": "pt goto 164", "context": "repl"})
        assert position(old.event("stopped")) == 164 and where(old) == ("add_mark", 21)
        assert watch(old, "student->count")["result"] == "4"
        stopped = move(old, "reverseContinue")
        assert stopped["reason"] == "history boundary" and position(stopped) == 0
        assert where(old) == ("main", 46)
    finally:
        assert old.close() == 0, old.stderr.decode(errors="replace")


def test_a_recursions_callers_are_each_their_own_frame(client, tmp_path):
    """Frames of the trace's calls past the first have no frame address, and LLDB finds an SBFrame again by its
    function and frame address: each of fact's callers came back as frame 0 (its pc, its line), and an
    expression in one of them was evaluated in frame 0.  Without known states every frame is the trace's."""
    bundle = json.loads((HISTORY / "recursion" / "trace.json").read_text())
    process = bundle["processes"][0]
    for key in ("coreFile", "startCoreFile"):
        process.pop(key)
    process["threads"][0].pop("registerStates")
    process["threads"][0]["iptTrace"] = str(HISTORY / "recursion" / process["threads"][0]["iptTrace"])
    for module in process["modules"]:
        module["file"] = str(HISTORY / "recursion" / module["file"])
    (tmp_path / "trace.json").write_text(json.dumps(bundle))
    recursion = client(tmp_path / "trace.json")
    source = str(SOURCES / "recursion.c")
    targets = recursion.ok("gotoTargets", {"source": {"path": source}, "line": 12})["targets"]
    move(recursion, "goto", targetId=targets[-1]["id"])  # fact(1), the innermost of fact(5)'s activations
    shown = frames(recursion)
    assert [(frame["name"], frame["line"]) for frame in shown[:6]] == [("fact", 12)] + [("fact", 13)] * 4 + [
        ("main", 23)
    ]
    assert (
        len({frame["instructionPointerReference"] for frame in shown[1:5]})
        == 1
        != shown[0]["instructionPointerReference"]
    )
    caller = shown[2]["id"]
    assert "frame #2 of the trace's calls has no registers" in recursion.error(
        "evaluate", {"expression": "n", "frameId": caller, "context": "watch"}
    )
    assert locals_of(recursion, 2)["Locals"] == {"(not known)": locals_of(recursion, 2)["Locals"]["(not known)"]}
    said = recursion.error("evaluate", {"expression": "register read rax", "context": "repl"})  # not a result
    assert "rax is not known at this position" in said  # that reads "error:"
