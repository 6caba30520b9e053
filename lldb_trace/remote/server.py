"""Answers to the GDB remote protocol's packets, over a Replay of the trace.

``Server.answer(payload)`` takes one unescaped packet and returns the
replies to send (a list: ``qRcmd`` sends its output before ``OK``; ``k``
sends none).  A packet it does not implement gets the empty reply, as the
protocol asks; a malformed one an ``E`` reply.  Nothing a client sends can
make it raise: every packet is untrusted.
"""

from __future__ import annotations

import re

from .. import progress
from ..errors import LldbTraceError
from ..progress import WorkInterruptedError
from . import libraries, monitor, registers
from .host_files import HostFiles
from .packets import MAX_PACKET, hex_bytes, hex_text
from .replay import SIGINT, Replay, Stop, Watchpoint

FEATURES = (
    f"PacketSize={MAX_PACKET:x};QStartNoAckMode+;qXfer:features:read+;qXfer:libraries-svr4:read+;"
    "qXfer:exec-file:read+;qXfer:auxv:read+;qXfer:threads:read+;ReverseStep+;ReverseContinue+;"
    "swbreak+;hwbreak+;vContSupported+"
)
MAX_MEMORY = (MAX_PACKET - 16) // 2  # bytes one m reply carries (hex: two digits each)
ERROR = b"E01"
NO_MEMORY = b"E14"  # EFAULT: not known at this position
_NUMBERS = re.compile(rb"^([0-9a-fA-F]{1,16}),([0-9a-fA-F]{1,16})$")


class Server:
    """One client's session with the trace: ``replay`` is shared, the protocol state is the connection's."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.no_ack = False  # after QStartNoAckMode
        self.closing = False  # k, vKill, D: the connection ends after the reply
        self.lldb = False  # the client asked qHostInfo, as LLDB does and GDB does not
        self.probed = False  # LLDB's first p (p0) asks whether p works at all: an error there and it reads g
        process = replay.process_trace.process
        self.files = HostFiles(libraries.served_files(process))
        self._interrupts = _Interrupts(replay)
        self._documents = {
            b"features": lambda annex: registers.target_xml().encode() if annex == b"target.xml" else None,
            b"exec-file": lambda _annex: libraries.exec_file(process).encode(),
            b"libraries-svr4": lambda _annex: libraries.svr4_library_list(process).encode(),
            b"auxv": lambda _annex: libraries.auxiliary_vector(process),
            b"threads": lambda _annex: libraries.thread_list(replay.pid, list(replay.threads), False).encode(),
        }

    def answer(self, payload: bytes) -> list[bytes]:
        try:
            with progress.reporting(self._interrupts):
                reply = self._dispatch(payload)
        except WorkInterruptedError:  # a resume stops where it started; other work answers EINTR
            reply = self._stop_reply(Stop(self.replay.resumed, SIGINT)) if _resumes(payload) else b"E04"
        except (LldbTraceError, ValueError, IndexError, OverflowError, UnicodeDecodeError):
            reply = ERROR
        return reply if isinstance(reply, list) else ([] if reply is None else [reply])

    def _dispatch(self, payload: bytes) -> bytes | list[bytes] | None:
        if not payload:
            return b""
        first, rest = payload[:1], payload[1:]
        simple = _SIMPLE.get(payload)
        if simple is not None:
            return simple(self)
        for prefix, prefixed in _PREFIXED:
            if payload.startswith(prefix):
                return prefixed(self, payload[len(prefix) :])
        by_letter = _BY_LETTER.get(first)
        return by_letter(self, rest) if by_letter is not None else b""

    # -- connection and process --------------------------------------------------------------------------

    def _supported(self, _features: bytes) -> bytes:
        return FEATURES.encode()

    def _no_ack(self) -> bytes:
        self.no_ack = True
        return b"OK"

    def _host_info(self) -> bytes:
        self.lldb, self.probed = True, False
        return b"triple:%s;ptrsize:8;endian:little;ostype:linux;vendor:pc;" % hex_text("x86_64-pc-linux-gnu")

    def _process_info(self) -> bytes:
        return b"pid:%x;triple:%s;ptrsize:8;endian:little;ostype:linux;vendor:pc;" % (
            self.replay.pid,
            hex_text("x86_64-pc-linux-gnu"),
        )

    def _kill(self) -> None:
        self.closing = True

    def _v_kill(self, _pid: bytes) -> bytes:
        self.closing = True
        return b"OK"

    def _detach(self, _rest: bytes) -> bytes:
        self.closing = True
        return b"OK"

    def _xfer(self, request: bytes) -> bytes:
        """``qXfer:OBJECT:read:ANNEX:OFFSET,LENGTH``."""
        parts = request.split(b":")
        if len(parts) != 4 or parts[1] != b"read":
            return b""
        make = self._documents.get(parts[0])
        if make is None:
            return b""
        offset, length = _two_numbers(parts[3])
        document = make(parts[2])
        if document is None:
            return b"E00"
        chunk = document[offset : offset + min(length, MAX_PACKET // 2)]
        return (b"l" if offset + len(chunk) >= len(document) else b"m") + chunk

    def _monitor(self, command: bytes) -> list[bytes]:
        text = monitor.run(self.replay, bytes.fromhex(command.decode()).decode(errors="replace"))
        return [b"O" + hex_text(text[k : k + 1000]) for k in range(0, len(text), 1000)] + [b"OK"]

    # -- threads -------------------------------------------------------------------------------------------

    def _thread_info_first(self) -> bytes:
        return b"m" + b",".join(b"%x" % tid for tid in self.replay.threads)

    def _current_thread(self) -> bytes:
        return b"QC%x" % self.replay.current

    def _select_thread(self, rest: bytes) -> bytes:
        which, tid = rest[:1], _thread_id(rest[1:])
        if which not in (b"g", b"c"):
            return ERROR
        self.replay.select(tid, for_resume=which == b"c")
        return b"OK"

    def _thread_alive(self, rest: bytes) -> bytes:
        return b"OK" if _thread_id(rest) in self.replay.threads else ERROR

    # -- registers and memory ------------------------------------------------------------------------------

    def _registers(self, _rest: bytes) -> bytes:
        state = self.replay.state()
        return registers.all_registers(state.registers, state.fpregs)

    def _register(self, rest: bytes) -> bytes:
        register = registers.by_number(int(rest, 16))
        if register is None:
            return ERROR
        state = self.replay.state()
        known = registers.register_bytes(register, state.registers, state.fpregs) is not None
        if self.lldb and self.probed and not known:
            return ERROR  # LLDB reads x digits as 0xcc bytes: an error is how it learns a register is not known
        self.probed = True
        return registers.encode(register, state.registers, state.fpregs)

    def _memory(self, rest: bytes) -> bytes:
        address, size = _two_numbers(rest)
        data = self.replay.read_memory(address, min(size, MAX_MEMORY))
        return hex_bytes(data) if data or not size else NO_MEMORY

    def _binary_memory(self, rest: bytes) -> bytes:
        address, size = _two_numbers(rest)
        if not size:
            return b"OK"  # LLDB's probe for the packet
        data = self.replay.read_memory(address, min(size, MAX_MEMORY))
        return data if data else NO_MEMORY

    def _read_only(self, _rest: bytes) -> bytes:
        return ERROR  # the past cannot be changed

    # -- breakpoints and watchpoints -------------------------------------------------------------------

    def _insert(self, rest: bytes) -> bytes:
        return self._point(rest, insert=True)

    def _remove(self, rest: bytes) -> bytes:
        return self._point(rest, insert=False)

    def _point(self, rest: bytes, insert: bool) -> bytes:
        fields = rest.split(b";")[0].split(b",")
        if len(fields) != 3 or fields[0] not in (b"0", b"1", b"2", b"3", b"4"):
            return b""
        kind, address, size = int(fields[0]), int(fields[1], 16), int(fields[2], 16)
        if kind < 2:
            if insert:
                self.replay.breakpoints[address] = kind
            else:
                self.replay.breakpoints.pop(address, None)
            return b"OK"
        if not 0 < size <= 1 << 20 or address + size > 1 << 64 or not self.replay.can_watch():
            return ERROR  # past the address space, or no values along the history: GDB asks again, then gives up
        watchpoint = Watchpoint(kind, address, size)
        if insert:
            self.replay.watchpoints.append(watchpoint)
        elif watchpoint in self.replay.watchpoints:
            self.replay.watchpoints.remove(watchpoint)
        return b"OK"

    # -- execution -----------------------------------------------------------------------------------------

    def _why_stopped(self) -> bytes:
        return self._stop_reply(self.replay.last_stop)

    def _step(self, rest: bytes) -> bytes:
        return self._stop_reply(self.replay.step(self.replay.resumed, reverse=False))

    def _continue(self, rest: bytes) -> bytes:
        return self._stop_reply(self.replay.continue_(self.replay.resumed, reverse=False))

    def _reverse(self, rest: bytes) -> bytes:
        if rest == b"s":
            return self._stop_reply(self.replay.step(self.replay.resumed, reverse=True))
        if rest == b"c":
            return self._stop_reply(self.replay.continue_(self.replay.resumed, reverse=True))
        return b""

    def _v_cont_actions(self) -> bytes:
        return b"vCont;c;C;s;S;r"

    def _v_cont(self, rest: bytes) -> bytes:
        """``vCont;ACTION[:TID]...``: the action for a named thread, else the default one, moves that thread."""
        chosen = None
        for action in rest.split(b";")[1:]:
            what, _, thread = action.partition(b":")
            if thread and _thread_id(thread) in self.replay.threads:
                chosen = (what, _thread_id(thread))
                break
            if not thread and chosen is None:
                chosen = (what, self.replay.resumed)
        if chosen is None:
            return ERROR
        what, tid = chosen
        if what[:1] in (b"s", b"S"):
            return self._stop_reply(self.replay.step(tid, reverse=False))
        if what[:1] in (b"c", b"C"):
            return self._stop_reply(self.replay.continue_(tid, reverse=False))
        if what[:1] == b"r":
            low, high = _two_numbers(what[1:])
            return self._stop_reply(self.replay.range_step(tid, low, high))
        if what[:1] == b"t":
            return self._stop_reply(Stop(tid, 0))
        return ERROR

    def _stop_reply(self, stop: Stop) -> bytes:
        self.replay.stopped(stop)
        reasons = b"".join(b"%s:%s;" % (key.encode(), value.encode()) for key, value in stop.reasons)
        return b"T%02xthread:%x;%s" % (stop.signal, stop.tid, reasons)


class _Interrupts:
    """The progress reporter while a packet is answered: long work stops when the client sent Ctrl-C."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay

    def begin(self, _title, _total):
        return None

    def advance(self, _handle, _done):
        pass

    def end(self, _handle):
        pass

    def interrupt_requested(self) -> bool:
        return self.replay.interrupted


def _resumes(payload: bytes) -> bool:
    return payload[:1] in (b"s", b"c") or payload.startswith((b"bs", b"bc", b"vCont;"))


def _two_numbers(text: bytes) -> tuple[int, int]:
    match = _NUMBERS.match(text)
    if match is None:
        raise ValueError(f"not ADDRESS,LENGTH: {text[:40]!r}")
    return int(match.group(1), 16), int(match.group(2), 16)


def _thread_id(text: bytes) -> int:
    """A thread id (hex; -1 all, 0 any; ``pPID.TID`` takes the tid)."""
    if text.startswith(b"p") and b"." in text:
        text = text.split(b".", 1)[1]
    return -1 if text == b"-1" else int(text, 16)


_SIMPLE = {
    b"?": Server._why_stopped,
    b"QStartNoAckMode": Server._no_ack,
    b"qfThreadInfo": Server._thread_info_first,
    b"qsThreadInfo": lambda _server: b"l",
    b"qC": Server._current_thread,
    b"qAttached": lambda _server: b"1",
    b"qHostInfo": Server._host_info,
    b"qProcessInfo": Server._process_info,
    b"vCont?": Server._v_cont_actions,
    b"vMustReplyEmpty": lambda _server: b"",
    b"k": Server._kill,
}
_PREFIXED = (
    (b"qSupported", Server._supported),
    (b"qXfer:", Server._xfer),
    (b"qRcmd,", Server._monitor),
    (b"vCont", Server._v_cont),
    (b"vKill", Server._v_kill),
    (b"vFile:", lambda server, rest: server.files.handle(rest)),
)
_BY_LETTER = {
    b"g": Server._registers,
    b"G": Server._read_only,
    b"p": Server._register,
    b"P": Server._read_only,
    b"m": Server._memory,
    b"M": Server._read_only,
    b"x": Server._binary_memory,
    b"X": Server._read_only,
    b"Z": Server._insert,
    b"z": Server._remove,
    b"s": Server._step,
    b"c": Server._continue,
    b"b": Server._reverse,
    b"H": Server._select_thread,
    b"T": Server._thread_alive,
    b"D": Server._detach,
}
