"""Hostile clients of `lldb-trace serve`: thousands of mutated packets, and byte streams that are no protocol at all.

Every mutant of the packets GDB and LLDB send is answered (a reply, possibly empty or an error) without
raising, within one packet's length; the framing survives any byte stream; and a server fed a stream of
junk and mutants still answers a well-formed packet after it.  The budget is small in CI;
``LLDB_TRACE_FUZZ_PACKETS=N`` runs N mutants by hand.  Seeded: the same mutants every run.
"""

import os
import random

import pytest
from support.paths import HISTORY, TRACES
from support.rsp_client import RspClient

import lldb_trace.api as pt
from lldb_trace.remote import Replay, Server
from lldb_trace.remote.packets import MAX_PACKET, PacketReader, frame

COUNT = int(os.environ.get("LLDB_TRACE_FUZZ_PACKETS", "3000"))
SEED = 2026
SEEDS = [
    b"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386", b"QStartNoAckMode", b"?", b"qC", b"qAttached",
    b"qfThreadInfo", b"qsThreadInfo", b"qHostInfo", b"qProcessInfo", b"vCont?", b"vMustReplyEmpty",
    b"qXfer:features:read:target.xml:0,3fff", b"qXfer:exec-file:read::0,fff", b"qXfer:libraries-svr4:read::0,fff",
    b"qXfer:auxv:read::0,fff", b"qXfer:threads:read::0,fff", b"Hg0", b"Hc-1", b"Hg1891", b"T1891", b"g", b"p10",
    b"p7", b"p3b", b"m401600,40", b"m7fffffffeb80,20", b"x401600,40", b"x0,0", b"Z0,401644,1", b"z0,401644,1",
    b"Z1,401700,1", b"Z2,7fffffffeb98,8", b"z2,7fffffffeb98,8", b"Z3,7fffffffeb98,4", b"Z4,7fffffffeb98,4",
    b"s", b"c", b"bs", b"bc", b"vCont;s:1891;c", b"vCont;c", b"vCont;r401600,401700:1891", b"vCont;t",
    b"qRcmd,696e666f", b"qRcmd,676f746f20313030", b"qRcmd,66696e64202d2d7772697465203078376666666666666665623938",
    b"vFile:setfs:0", b"vFile:open:2f746d702f6c6c64622d74726163652d686973746f72792f6772616465626f6f6b,0,0",
    b"vFile:pread:3,100,0", b"vFile:fstat:3", b"vFile:close:3", b"vFile:size:2f746d70", b"vFile:exists:2f",
    b"M401600,1:90", b"X401600,1:\x90", b"G00", b"P0=00", b"qOffsets", b"qSymbol::", b"D",
]  # fmt: skip
NUMBERS = [b"0", b"-1", b"ffffffffffffffff", b"10000000000000000", b"7fffffff", b"zz", b"", b"1" * 40]


def mutate(rng, packet):
    data = bytearray(packet)
    for _ in range(rng.randrange(1, 4)):
        choice = rng.randrange(7)
        where = rng.randrange(len(data) + 1)
        if choice == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif choice == 1:
            data[where:where] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif choice == 2:
            del data[where:]
        elif choice == 3:
            data[where:where] = rng.choice(NUMBERS)
        elif choice == 4:
            data += b"," + rng.choice(NUMBERS)
        elif choice == 5:
            data[where:where] = rng.choice(SEEDS)
        else:
            data = bytearray(rng.choice(b"gpmxZzsbcHTqQv")) + rng.choice(NUMBERS) + b"," + rng.choice(NUMBERS)
    return bytes(data[:MAX_PACKET])


@pytest.fixture(scope="module")
def servers():
    return [Server(Replay(pt.open_bundle(path))) for path in (HISTORY / "gradebook", TRACES / "crash")]


def test_mutated_packets_are_answered(servers):
    rng = random.Random(SEED)
    for number in range(COUNT):
        server = servers[number % len(servers)]
        packet = mutate(rng, rng.choice(SEEDS))
        replies = server.answer(packet)  # raising is the failure
        assert isinstance(replies, list) and all(isinstance(r, bytes) for r in replies), packet
        assert all(len(r) <= MAX_PACKET for r in replies), (packet, [len(r) for r in replies])
        server.closing = False  # a mutant that ended the session: the next one starts another


def test_the_framing_survives_any_stream():
    rng = random.Random(SEED)
    reader = PacketReader()
    for _ in range(COUNT):
        stream = bytes(rng.choice(b"$#}*+-\x03ab0f") if rng.random() < 0.5 else rng.randrange(256) for _ in range(64))
        for event in reader.feed(stream):
            assert event.kind in ("packet", "interrupt", "ack", "nack", "bad checksum", "too long")
    assert [e.kind for e in reader.feed(b"#00" + frame(b"qC"))][-1] == "packet"  # resynchronised at the next $


def test_a_server_fed_junk_and_mutants_still_answers():
    rng = random.Random(SEED + 1)
    client = RspClient(HISTORY / "gradebook")
    client.start_no_ack()
    junk = b"".join(
        frame(mutate(rng, rng.choice(SEEDS)).replace(b"D", b"d").replace(b"vKill", b"vk").replace(b"k", b"j"))
        if rng.random() < 0.7
        else bytes(rng.randrange(256) for _ in range(rng.randrange(1, 100)))
        for _ in range(200)
    )
    client.send_raw(junk)
    client.send(b"qRcmd," + b"goto 123".hex().encode())  # the replies to the junk come first, then this one's
    marker = b"O" + b"Position: instruction 123 of 274.".hex().encode()
    while (reply := client.reply()) is not None and not reply.startswith(marker):
        pass
    assert reply is not None and client.reply() == b"OK"
    assert client.ask(b"qC").startswith(b"QC")
    status, errors = client.close()
    assert status == 0 and "Traceback" not in errors, errors
