"""Thousands of mutated DAP messages: each gets an answer or an error, never a crash, hang or traceback.

Two campaigns, seeded so every run sends the same messages:

- the framing: valid messages' bytes damaged (bytes flipped, cut, repeated, lengths changed, junk) and read
  by lldb_trace.dap.protocol until the stream ends, each read a message, a malformed-body error or a
  framing error that ends the stream;
- the requests: one ``lldb-trace dap`` on the gradebook recording gets every request it implements (and some
  it does not) with mutated arguments (wrong types, huge and negative numbers, missing and extra keys, lone
  surrogates, deep nesting) and well-framed bodies that are not JSON objects; each must be answered once,
  by a success or a one-line error that is no internal error, and the server must still answer at the end.

The budget is small in the suite; ``LLDB_TRACE_DAP_FUZZ=N`` sends N of each by hand (``LLDB_TRACE_DAP_SEED``
picks another seed).
"""

import copy
import io
import json
import os
import random

import pytest
from support.dap_client import DapClient
from support.paths import HISTORY, SOURCES

from lldb_trace.dap import protocol

BUDGET = int(os.environ.get("LLDB_TRACE_DAP_FUZZ", "2000"))
SEED = int(os.environ.get("LLDB_TRACE_DAP_SEED", "2029"))
GRADEBOOK = HISTORY / "gradebook" / "trace.json"
BATCH = 10  # requests in flight at once (ids are fetched again before each batch: a move makes them stale)

JUNK_VALUES = [
    None, True, False, 0, -1, 1, 7, 2**31, 2**32, 2**63, 2**64 + 5, -(2**70), 10**300, 3.5, -0.0, float("inf"),
    "", "x", "0x401620", "-1", "gradebook.c", "\ud800", "a\x00b", "é" * 50, "x" * 5000, [], [1, "a", None],
    {}, {"path": 3}, {"line": "23"}, [[[[[[[[[[[]]]]]]]]]]],
]  # fmt: skip


def _junk(rng):
    return copy.deepcopy(rng.choice(JUNK_VALUES))  # a copy: a later damage may change it in place


def _mutated_stream(rng):
    """Several valid messages' bytes with one to three damages."""
    messages = [{"seq": k, "type": "request", "command": "threads"} for k in range(rng.randint(1, 3))]
    data = bytearray(b"".join(protocol.encode(message) for message in messages))
    for _ in range(rng.randint(1, 3)):
        where = rng.randrange(len(data) + 1)
        kind = rng.randrange(8)
        if kind == 0 and data:
            data[min(where, len(data) - 1)] = rng.randrange(256)
        elif kind == 1:
            data[where:where] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
        elif kind == 2:
            del data[where : where + rng.randint(1, 30)]
        elif kind == 3:
            data = data[:where]
        elif kind == 4:
            data[where:where] = data[: rng.randint(0, len(data))]
        elif kind == 5:
            length = rng.choice([b"-1", b"0", b"1e3", b"99999999999999999999", b"", b" 12", b"0x10", b"16777217"])
            data = data.replace(b"Content-Length: ", b"Content-Length: " + length + b"#", 1).replace(b"#", b"", 1)
        elif kind == 6:
            data = bytearray(b"X-Header: " + b"y" * rng.randint(1, 10000) + b"\r\n") + data
        else:
            data = bytearray(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
    return bytes(data)


def test_damaged_streams_end_in_a_message_or_a_one_line_error():
    rng = random.Random(SEED)
    ended = {"framing": 0, "malformed": 0, "clean": 0}
    for _ in range(BUDGET * 5):
        stream = io.BytesIO(_mutated_stream(rng))
        for _read in range(100):  # each read takes bytes from the stream: a few reads reach its end
            try:
                message = protocol.read_message(stream)
            except protocol.MalformedMessageError as error:
                assert "\n" not in str(error)
                ended["malformed"] += 1
                continue
            except protocol.FramingError as error:
                assert "\n" not in str(error)
                ended["framing"] += 1
                break
            if message is None:
                ended["clean"] += 1
                break
            assert isinstance(message, dict)
        else:
            pytest.fail("a stream never ended")
    assert all(ended.values()), ended  # every way of ending was reached


def _valid_requests(ids):
    """Every request the server implements, with arguments that make sense now (``ids``: from the last stop)."""
    thread, frame, reference = ids["thread"], ids["frame"], ids["reference"]
    source = {"path": str(SOURCES / "gradebook.c")}
    return [
        ("threads", {}),
        ("stackTrace", {"threadId": thread, "startFrame": 0, "levels": 3}),
        ("scopes", {"frameId": frame}),
        ("variables", {"variablesReference": reference, "start": 0, "count": 2}),
        ("evaluate", {"expression": "student->count", "context": "watch", "frameId": frame}),
        ("evaluate", {"expression": "student", "context": "hover", "frameId": frame}),
        ("evaluate", {"expression": "pt reverse-stepi", "context": "repl"}),
        ("source", {"sourceReference": 1}),
        ("setBreakpoints", {"source": source, "breakpoints": [{"line": 23}, {"line": 30}]}),
        ("setFunctionBreakpoints", {"breakpoints": [{"name": "average"}]}),
        ("setExceptionBreakpoints", {"filters": []}),
        ("gotoTargets", {"source": source, "line": 23}),
        ("goto", {"threadId": thread, "targetId": 100}),
        ("disassemble", {"memoryReference": "0x401620", "instructionOffset": -4, "instructionCount": 8}),
        *[(step, {"threadId": thread, "granularity": "line"}) for step in ("next", "stepIn", "stepOut", "stepBack")],
        ("continue", {"threadId": thread}),
        ("reverseContinue", {"threadId": thread}),
        ("pause", {"threadId": thread}),
        ("cancel", {"requestId": 1}),
        ("configurationDone", {}),
        ("initialize", {"adapterID": "fuzz"}),
        ("launch", {"trace": str(GRADEBOOK)}),
        ("noSuchRequest", {}),
    ]


def _mutate(rng, command, arguments):
    """The request with up to three damages: a key dropped, junk in a value (nested too), a number moved."""
    if rng.random() < 0.03:
        return command, _junk(rng)  # arguments that are no object
    arguments = json.loads(json.dumps(arguments))
    for _ in range(rng.randint(0, 3)):
        kind, keys = rng.randrange(5), list(arguments)
        if kind == 0 and keys:
            del arguments[rng.choice(keys)]
        elif kind == 1 and keys:
            arguments[rng.choice(keys)] = _junk(rng)
        elif kind == 2:
            arguments[rng.choice(["threadId", "frameId", "x", "source", "breakpoints", "line"])] = _junk(rng)
        elif kind == 3:
            for value in arguments.values():
                if isinstance(value, dict) and value:
                    value[rng.choice(list(value))] = _junk(rng)
                if isinstance(value, list) and value and isinstance(value[0], dict):
                    value[0][rng.choice(list(value[0]) or ["line"])] = _junk(rng)
        else:  # a number near a real one: another line, index, count or offset
            numbers = [key for key, value in arguments.items() if type(value) is int and key != "threadId"]
            if numbers:
                arguments[rng.choice(numbers)] = rng.choice([0, 1, -3, 300, 20000, rng.randint(-50, 400)])
    if command == "evaluate" and arguments.get("context") == "repl":
        arguments["expression"] = "pt reverse-stepi"  # console commands run as typed: only a harmless one
    return command, arguments


def _ids(client, tid):
    """Fresh ids: the thread, frame 0 and its first scope."""
    frame = client.ok("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
    reference = client.ok("scopes", {"frameId": frame})["scopes"][0]["variablesReference"]
    return {"thread": tid, "frame": frame, "reference": reference}


def test_mutated_requests_are_each_answered_once():
    rng = random.Random(SEED)
    client = DapClient()
    try:
        client.start(GRADEBOOK)
        tid = client.ok("threads")["threads"][0]["id"]
        sent = 0
        while sent < BUDGET:
            ids = _ids(client, tid)
            batch = []
            for _ in range(min(BATCH, BUDGET - sent)):
                client.seq += 1
                if rng.random() < 0.05:  # a well-framed body that is no request
                    client.send_bytes(protocol.encode(_junk(rng))[:-1] + b" ")
                    batch.append(0)
                    continue
                command, arguments = _mutate(rng, *rng.choice(_valid_requests(ids)))
                client.send({"seq": client.seq, "type": "request", "command": command, "arguments": arguments})
                batch.append(client.seq)
            for seq in batch:
                answer = client.response(seq)
                assert answer["success"] or _one_line_error(answer["message"]), answer
            sent += len(batch)
            client.events.clear()
        assert client.ok("threads")["threads"][0]["id"] == tid  # still answering
    finally:
        client.close()
    assert b"Traceback" not in client.stderr, client.stderr.decode(errors="replace")


def _one_line_error(message):
    return isinstance(message, str) and message and "\n" not in message and "internal error" not in message
