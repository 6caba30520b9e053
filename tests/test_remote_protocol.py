"""`lldb-trace serve`: the GDB remote protocol, packet by packet, against committed traces.

The gradebook recording (test_traces/history/gradebook: a crash, its core, values along the trace)
answers with values; the crash bundle (test_traces/crash: a dynamically linked program traced
without a core) with its libraries and the pc alone.  What a reply should hold comes from the
Python API on the same bundle and from the module files, not from the server.
"""

import re
import socket
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
from support.paths import HISTORY, ROOT, TRACES
from support.rsp_client import RspClient

import lldb_trace.api as pt
from lldb_trace.remote import libraries
from lldb_trace.remote.packets import PacketReader, frame
from lldb_trace.remote.registers import REGISTERS

GRADEBOOK = HISTORY / "gradebook"
CRASH = TRACES / "crash"
COURSE = 0x7FFFFFFFEB98  # &student->course, overwritten by add_mark (README's bug hunt)


@pytest.fixture
def client():
    client = RspClient(GRADEBOOK)
    client.start_no_ack()
    yield client
    status, errors = client.close()
    assert status == 0 and "Traceback" not in errors, errors


def stop_fields(reply):
    """``(signal, {key: value})`` of a T stop reply."""
    assert reply[:1] == b"T", reply
    fields = dict(part.split(b":", 1) for part in reply[3:].split(b";") if part)
    return int(reply[1:3], 16), {key.decode(): value.decode() for key, value in fields.items()}


def position(client):
    return int(client.monitor("info").split(" at position ")[1].split(":")[0])


def register(client, number):
    return int.from_bytes(bytes.fromhex(client.ask(b"p%x" % number).decode()), "little")


def test_announces_reverse_execution_and_the_documents():
    client = RspClient(GRADEBOOK)
    supported = client.ask(b"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386").decode()
    assert client.acks[0] == "ack"  # before QStartNoAckMode every packet is acknowledged
    for feature in ("ReverseStep+", "ReverseContinue+", "qXfer:features:read+", "qXfer:libraries-svr4:read+"):
        assert feature in supported.split(";")
    client.start_no_ack()
    document = client.ask(b"qXfer:features:read:target.xml:0,3fff")
    assert document[:1] == b"l"
    target = ElementTree.fromstring(document[1:])
    registers = target.iter("reg")
    numbers = {reg.get("name"): int(reg.get("regnum")) for reg in registers}
    assert numbers["rax"] == 0 and numbers["rip"] == 16 and numbers["eflags"] == 17 and numbers["st0"] == 24
    assert numbers["xmm0"] == 40 and numbers["fs_base"] == 58 and len(numbers) == 60
    assert client.ask(b"qXfer:exec-file:read::0,100") == b"l/tmp/lldb-trace-history/gradebook/gradebook"
    assert client.ask(b"qXfer:features:read:other.xml:0,100") == b"E00"
    assert client.close()[0] == 0


def test_the_end_of_a_crash_shows_the_core(client):
    signal, fields = stop_fields(client.ask(b"?"))
    thread = pt.open_bundle(GRADEBOOK).threads[0]
    assert signal == 11 and int(fields["thread"], 16) == thread.tid
    core = thread.registers_at(thread.item_count)
    assert register(client, 16) == 0x4016DF == core["rip"]
    assert register(client, 7) == core["rsp"] and register(client, 0) == core["rax"]
    assert len(client.ask(b"g")) == sum(2 * r.size for r in REGISTERS)


def test_stepping_both_ways_and_the_ends_of_history(client):
    assert stop_fields(client.ask(b"bs"))[1].get("replaylog") is None
    assert position(client) == 273
    signal, fields = stop_fields(client.ask(b"bc"))  # nothing set: the beginning
    assert signal == 5 and fields["replaylog"] == "begin" and position(client) == 0
    assert stop_fields(client.ask(b"bs"))[1]["replaylog"] == "begin"
    assert stop_fields(client.ask(b"s"))[1].get("replaylog") is None and position(client) == 1
    assert stop_fields(client.ask(b"vCont;c"))[1]["replaylog"] == "end" and position(client) == 274


def test_codellldb_step_back(client):
    """CodeLLDB's step-back button: Hc, bs, then another bs and a step to refresh LLDB's state: one back."""
    tid = pt.open_bundle(GRADEBOOK).threads[0].tid
    assert client.ask(b"Hc%x" % tid) == b"OK"
    for packet in (b"bs", b"bs", b"vCont;s:%x" % tid):
        assert stop_fields(client.ask(packet))[0] == 5
    assert position(client) == 273


def test_breakpoints_stop_where_the_history_does(client):
    thread = pt.open_bundle(GRADEBOOK).threads[0]
    entry = thread.history.pc_at(173)  # add_mark's store over the pointer
    expected = thread.history.continue_([entry], reverse=True).position
    assert client.ask(b"Z0,%x,1" % entry) == b"OK"
    _signal, fields = stop_fields(client.ask(b"bc"))
    assert "swbreak" in fields and position(client) == expected
    assert register(client, 16) == entry
    assert client.ask(b"z0,%x,1" % entry) == b"OK"
    assert stop_fields(client.ask(b"bc"))[1]["replaylog"] == "begin"


def memory_word(client, address):
    return int.from_bytes(bytes.fromhex(client.ask(b"m%x,8" % address).decode()), "little")


def test_a_write_watchpoint_stops_at_each_write_in_either_direction(client):
    """Backwards, at the writing instruction with the write undone (GDB then shows its old and new values, as
    over rr); forwards, right after it."""
    assert client.ask(b"Z2,%x,8" % COURSE) == b"OK"
    _, fields = stop_fields(client.ask(b"bc"))
    assert int(fields["watch"], 16) == COURSE and position(client) == 173  # add_mark's store over the pointer
    assert memory_word(client, COURSE) == 0x4A40D0  # the course pointer, before the mark overwrote its low half
    _, fields = stop_fields(client.ask(b"bc"))
    assert int(fields["watch"], 16) == COURSE and position(client) == 10  # main stores the pointer
    assert memory_word(client, COURSE) == 0
    _, fields = stop_fields(client.ask(b"c"))
    assert int(fields["watch"], 16) == COURSE and position(client) == 11 and memory_word(client, COURSE) == 0x4A40D0
    _, fields = stop_fields(client.ask(b"c"))
    assert position(client) == 174 and memory_word(client, COURSE) == 6
    assert client.ask(b"z2,%x,8" % COURSE) == b"OK"
    assert client.ask(b"Z2,%x,8" % COURSE) == b"OK" and client.ask(b"Z3,10,0") == b"E01"  # no bytes to watch
    assert client.ask(b"Z2,fffffffffffffffc,8") == b"E01"  # past the address space: it was accepted


def test_memory_known_unknown_and_module_code(client):
    thread = pt.open_bundle(GRADEBOOK).threads[0]
    pc = thread.history.pc_at(100)
    client.monitor("goto 100")
    code = bytes.fromhex(client.ask(b"m%x,10" % pc).decode())
    assert code == thread.module_bytes.read_unchanging(pc, 16)
    assert client.ask(b"m10,8") == b"E14"  # never mapped, never known
    assert client.ask(b"mzz,8") == b"E01" and client.ask(b"m1,") == b"E01"
    assert len(client.ask(b"m%x,ffffffff" % pc)) <= 0x4000  # a huge length is cut to a packet
    assert client.ask(b"M%x,1:90" % pc) == b"E01" and client.ask(b"G00") == b"E01"  # the past is read-only


def test_monitor_commands(client):
    assert "goto begin|end|N" in client.monitor("help")
    assert client.monitor("goto 100").startswith("Position: instruction 100 of 274.")
    assert position(client) == 100
    assert "error: position 9999 is out of range" in client.monitor("goto 9999")
    found = client.monitor("find --write 0x7fffffffeb98 --size 8")
    assert "173  write 4 bytes: d0404a00 -> 06000000" in found and "10  write 8 bytes" in found
    assert "execution(s) of add_mark" in client.monitor("find add_mark")
    every = client.monitor("find add_mark --limit 0")  # all five calls; --limit 2 the newest two, and says so
    assert every.startswith("5 execution(s) of add_mark") and "... and more" not in every
    two = client.monitor("find add_mark --limit 2")
    assert two.startswith("the newest 2 execution(s)") and two.endswith("... and more: --limit N shows more than 2\n")
    assert two.splitlines()[1:3] == every.splitlines()[1:3]
    assert "--limit needs 0 (all) or more" in client.monitor("find add_mark --limit -1")
    assert "--size needs 1 or more" in client.monitor("find --write 0x10 --size 0")
    assert client.monitor("bt").startswith("#0 ")
    assert "unknown monitor command" in client.monitor("frobnicate")
    assert "error:" in client.monitor('find "unterminated')


def test_threads_and_unknown_packets(client):
    tid = pt.open_bundle(GRADEBOOK).threads[0].tid
    assert client.ask(b"qfThreadInfo") == b"m%x" % tid and client.ask(b"qsThreadInfo") == b"l"
    assert client.ask(b"qC") == b"QC%x" % tid and client.ask(b"Hg%x" % tid) == b"OK"
    assert client.ask(b"Hg1234567") == b"E01" and client.ask(b"T%x" % tid) == b"OK" and client.ask(b"T1") == b"E01"
    assert client.ask(b"qNoSuchThing") == b"" and client.ask(b"vNoSuchThing") == b"" and client.ask(b"!") == b""
    assert client.ask(b"qXfer:threads:read::0,fff").startswith(b"l<threads>")


def test_libraries_auxiliary_vector_and_files():
    client = RspClient(CRASH)
    client.start_no_ack()
    trace = pt.open_bundle(CRASH)
    process = trace.processes[0].process
    listing = ElementTree.fromstring(client.ask(b"qXfer:libraries-svr4:read::0,3fff")[1:])
    names = [library.get("name") for library in listing]
    assert names == [module.system_path for module in process.modules[1:]]
    vector = client.ask(b"qXfer:auxv:read::0,3fff")[1:]
    entries = dict(struct.iter_unpack("<QQ", vector))
    program = libraries._info(process.modules[0])
    assert entries[libraries.AT_ENTRY] == program.entry and entries[libraries.AT_PHNUM] == program.program_headers[1]
    libc = process.modules[1]
    reply = client.ask(b"vFile:open:%s,0,0" % libc.system_path.encode().hex().encode())
    descriptor = int(reply[1:], 16)
    data = client.ask(b"vFile:pread:%x,100,0" % descriptor)
    assert data.startswith(b"F100;") and data[5:] == libc.path.read_bytes()[:256]
    assert client.ask(b"vFile:close:%x" % descriptor) == b"F0"
    assert client.ask(b"vFile:open:%s,0,0" % b"/etc/passwd".hex().encode()) == b"F-1,2"  # not named by the trace
    assert client.ask(b"vFile:open:%s,1,0" % libc.system_path.encode().hex().encode()) == b"F-1,d"  # no writing
    assert client.ask(b"vFile:pread:63,10,0") == b"F-1,9" and client.ask(b"vFile:open:zz") == b"F-1,16"
    linker = client.ask(b"vFile:open:%s,0,0" % b"/lib64/ld-linux-x86-64.so.2".hex().encode())
    assert linker.startswith(b"F") and not linker.startswith(b"F-1")  # the program's name for its linker
    rip = register(client, 16)
    assert rip == trace.threads[0].history.pc
    assert client.ask(b"p7") == b"xx" * 8  # no core: rsp is not known
    assert client.ask(b"qHostInfo").startswith(b"triple:")  # LLDB asks it (GDB does not), and reads x as 0xcc
    assert client.ask(b"p0") == b"xx" * 8  # LLDB's probe of p: an error there and it reads g, x digits and all
    assert client.ask(b"p7") == b"E01" and register(client, 16) == rip
    assert client.close()[0] == 0


def test_acks_checksums_junk_and_limits():
    client = RspClient(GRADEBOOK)
    client.send_raw(b"$qC#00")  # a bad checksum: a nack, and the client resends
    assert client.ask(b"qC").startswith(b"QC") and "nack" in client.acks
    client.send_raw(b"\x00\xff junk ++ \x03")  # between packets: ignored (an idle interrupt too)
    client.send_raw(b"$" + b"m" * 0x5000 + b"#00")  # longer than PacketSize
    assert client.acks.count("nack") == 1
    assert client.ask(b"qC").startswith(b"QC")
    assert client.acks.count("nack") == 2
    client.send_raw(frame(b"m10,8")[:4])  # the client goes away mid-packet
    status, errors = client.close()
    assert status == 0 and not errors


def test_kill_and_detach_end_the_session():
    for packet in (b"D", b"vKill;1"):
        client = RspClient(GRADEBOOK)
        client.start_no_ack()
        assert client.ask(packet) == b"OK"
        assert client.reply() is None
        assert client.close() == (0, "")


def test_an_interrupt_stops_a_resume_where_it_started():
    from lldb_trace.remote import Replay, Server

    replay = Replay(pt.open_bundle(GRADEBOOK))
    server = Server(replay)
    assert server.answer(b"Z2,%x,8" % COURSE) == [b"OK"]
    replay.interrupted = True  # the reader thread saw 0x03 while bc was queued
    [reply] = server.answer(b"bc")
    assert reply.startswith(b"T02") and replay.thread(replay.current).history.at_end
    replay.interrupted = False
    assert server.answer(b"bc")[0].startswith(b"T05")


def test_each_thread_replays_its_own_history():
    """Per-thread replay (GDB btrace's way): resuming one thread leaves the others where they stand."""
    trace = pt.open_bundle(TRACES / "threads")
    counts = {thread.tid: thread.item_count for thread in trace.threads}
    main, *others = sorted(counts)
    client = RspClient(TRACES / "threads")
    client.start_no_ack()
    listed = {int(tid, 16) for tid in client.ask(b"qfThreadInfo")[1:].split(b",")}
    assert listed == set(counts)
    worker = others[0]
    assert client.ask(b"Hc%x" % worker) == b"OK"
    _, fields = stop_fields(client.ask(b"bs"))
    assert int(fields["thread"], 16) == worker
    assert stop_fields(client.ask(b"vCont;s:%x;c" % main))[1]["replaylog"] == "end"  # main stood at its end
    info = client.monitor("info")
    stands = {int(tid): int(at) for tid, at in re.findall(r"thread (\d+) at position (\d+):", info)}
    assert stands == {**counts, worker: counts[worker] - 1}
    assert client.ask(b"Hg%x" % worker) == b"OK"
    assert register(client, 16) == trace.thread(worker).history.pc_at(counts[worker] - 1)
    assert client.close()[0] == 0


def test_each_client_of_a_port_starts_where_the_trace_ends():
    """`--port` serves one client after another; a client's movements and breakpoints are its own."""
    command = [sys.executable, "-m", "lldb_trace.cli", "serve", "--port", "0", str(GRADEBOOK)]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stderr.readline()).group(1))
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", port)) as connection:
                reader = PacketReader()

                def ask(payload, connection=connection, reader=reader):
                    connection.sendall(frame(payload))
                    while True:
                        for event in reader.feed(connection.recv(65536)):
                            if event.kind == "packet":
                                connection.sendall(b"+")
                                return event.payload

                assert ask(b"?").startswith(b"T0b")  # the crash, where the trace ends
                assert ask(b"p10") == struct.pack("<Q", 0x4016DF).hex().encode()  # the first client moved back
                assert ask(b"Z0,4016df,1") == b"OK"
                assert ask(b"bs").startswith(b"T05") and ask(b"D") == b"OK"
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_bad_arguments_are_one_line_errors(tmp_path):
    busy = socket.create_server(("127.0.0.1", 0))
    try:
        port = busy.getsockname()[1]
        bad_json = tmp_path / "bad.json"
        bad_json.write_text("garbage")
        cases = [
            (["--stdio", str(tmp_path / "none")], "no such bundle file"),
            (["--port", "99999", str(GRADEBOOK)], "--port 99999 is no TCP port"),
            (["--port", str(port), str(GRADEBOOK)], f"cannot listen on 127.0.0.1:{port}: Address already in use"),
            (["--stdio", "--log", str(tmp_path / "no" / "x.log"), str(GRADEBOOK)], "cannot write the log"),
            (["--stdio", str(bad_json)], "invalid JSON"),
        ]
        for arguments, says in cases:
            done = subprocess.run(
                [sys.executable, "-m", "lldb_trace.cli", "serve", *arguments],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=ROOT,
            )  # fmt: skip
            assert done.returncode == 1 and done.stderr.startswith("error: ") and says in done.stderr, done.stderr
            assert done.stderr.count("\n") == 1 and not done.stdout
    finally:
        busy.close()


def test_a_second_client_is_turned_away_while_one_is_served():
    """It waited unanswered until the first left; now its connection closes at once, and the server says why."""
    command = [sys.executable, "-m", "lldb_trace.cli", "serve", "--port", "0", str(GRADEBOOK)]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stderr.readline()).group(1))
        with socket.create_connection(("127.0.0.1", port)) as first:
            assert "connected" in _line_with(server, "client")
            with socket.create_connection(("127.0.0.1", port)) as second:
                assert second.recv(1) == b""  # closed by the server
            assert "turned away: another client is connected" in _line_with(server, "client")
            first.sendall(frame(b"?"))  # the first is served still
            reader, answer = PacketReader(), []
            while not answer:
                answer = [event.payload for event in reader.feed(first.recv(65536)) if event.kind == "packet"]
            assert answer[0].startswith(b"T0b")
    finally:
        server.terminate()
        server.wait(timeout=60)


def _line_with(server, word):
    """The server's next line of stderr that holds ``word`` (the banner's lines come first)."""
    while True:
        line = server.stderr.readline()
        if word in line or not line:
            return line


def test_monitor_goto_moves_the_thread_it_is_given():
    """GDB's ``thread N`` does not tell the server, so ``monitor goto`` takes ``--thread TID``, and names the
    thread it moved in a process of several."""
    client = RspClient(TRACES / "threads")
    tids = [thread.tid for thread in pt.open_bundle(TRACES / "threads").threads]
    other = next(tid for tid in tids if b"%x" % tid not in client.ask(b"qC"))
    assert client.monitor(f"goto 0 --thread {other}").startswith(f"Thread {other}: Position: instruction 0 of")
    assert f"thread {other} at position 0:" in client.monitor("info")
    assert "--thread 12: no such thread; the trace's threads are" in client.monitor("goto 0 --thread 12")
    assert client.close()[0] == 0
