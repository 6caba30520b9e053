"""One thread's control flow written as an Intel PT packet stream.

The packet scheme (checked to decode exactly with libipt and native LLDB):

- start: ``PSB, [TSC], PSBEND, MODE.Exec, TIP.PGE(first ip)``
- a conditional branch adds one TNT bit (oldest in the highest bit); up to 47
  bits are collected and flushed as TNT-8 (1-6 bits) or TNT-64;
- returns and indirect jumps/calls: flush TNT, ``TIP(target)``;
- direct jumps and calls: nothing;
- syscalls and other far transfers (user-only tracing): flush, ``TIP.PGD``
  with the IP suppressed; tracing resumes with ``[TSC], MODE.Exec, TIP.PGE``;
- an asynchronous transfer (a signal) while enabled: ``FUP(interrupted ip),
  TIP.PGD``, then ``TIP.PGE(handler)`` at the next instruction;
- periodic ``PSB, [TSC], MODE.Exec, FUP(ip), PSBEND`` before a non-branch
  instruction, once ``psb_period`` bytes were written since the last one;
- end: ``FUP(stop ip), TIP.PGD``.

With a clock, ``[TSC]`` is a TSC packet (with TMA and CBR when MTC or CYC
are on), and MTC and CYC packets go before the packets libipt gives a time:
TNT (at the time of its first branch), TIP, TIP.PGE, TIP.PGD and FUP (see
timing_packets.py).

IP packets are compressed against the last IP (reset at every PSB), since
libipt's encoder writes what it is given.  Packets go through libipt's
encoder into a fixed buffer that is drained into ``self.data``.
"""

import ctypes
import struct

from ... import libipt
from ...libipt.enums import IpCompression, PacketType
from ...libipt.structs import pt_packet
from .timing_packets import TimingPackets

_CHUNK = 1 << 16
_MAX_TNT = 47


def _compress(last_ip, ip):
    """The cheapest IP compression for ``ip`` given the last IP."""
    if last_ip is not None:
        if last_ip >> 16 == ip >> 16:
            return IpCompression.UPDATE_16, ip & 0xFFFF
        if last_ip >> 32 == ip >> 32:
            return IpCompression.UPDATE_32, ip & 0xFFFFFFFF
    top = ip >> 47
    if top in (0, 0x1FFFF):
        return IpCompression.SEXT_48, ip & 0xFFFFFFFFFFFF
    return IpCompression.FULL, ip


class StreamWriter:
    """Encodes one thread's flow; ``clock()`` returns the TSC value, or is None for no timing.

    ``mtc_period`` (IA32_RTIT_CTL.MTCFreq) adds MTC packets, ``cycle_accurate`` CYC packets.
    """

    def __init__(self, psb_period=4096, clock=None, mtc_period=None, cycle_accurate=False):
        self.psb_period = psb_period
        self.clock = clock
        self.data = bytearray()
        self.psbs = []  # (stream offset of each PSB, index of the instruction it synchronizes at)
        self.enabled = False
        self.written = 0  # bytes encoded so far (pt_enc_next returns each packet's size)
        self._last_ip = None
        self._tnt_bits = 0
        self._tnt_count = 0
        self._tnt_time = None
        self.last_psb = 0
        self._config = libipt.Config(bytearray(_CHUNK))
        self._encoder = libipt.Encoder(self._config)
        self._packet = pt_packet()
        self._packet_ref = ctypes.byref(self._packet)
        self._next = self._encoder._fn["next"]
        self._handle = self._encoder.handle
        self._timing = TimingPackets(self._emit, clock, mtc_period, cycle_accurate) if clock else None
        self._fine = self._timing is not None and self._timing.fine

    # Low level.

    def _emit(self, kind, fmt="", *values):
        packet = self._packet
        packet.type = kind
        if fmt:
            struct.pack_into(fmt, packet.payload, 0, *values)
        status = self._next(self._handle, self._packet_ref)
        if status < 0:
            if -status != libipt.ErrorCode.EOS:
                raise libipt.LibiptError(status, f"pt_enc_next {PacketType(kind).name}")
            self._drain()
            status = libipt.check(self._next(self._handle, self._packet_ref), f"pt_enc_next {PacketType(kind).name}")
        self.written += status

    def _drain(self):
        used = self._encoder.offset
        self.data += self._config.trace[:used]
        self._encoder.sync_set(0)

    def _ip_packet(self, kind, ip):
        ipc, payload = _compress(self._last_ip, ip)
        self._emit(kind, "<I4xQ", ipc, payload)
        self._last_ip = ip

    def _suppressed(self, kind):
        self._emit(kind, "<I4xQ", IpCompression.SUPPRESSED, 0)

    def _tsc(self, now=None):
        if self._timing is not None:
            self._timing.header(now)

    def _timed(self, when=None):
        """MTC/CYC due before a packet about something that happened at ``when`` (default: now); returns the
        time used, for a TSC that follows (one reading: cycles must add up to the next TSC exactly)."""
        if self._fine:
            when = self.clock() if when is None else when
            self._timing.before(when)
        return when

    def _mode_exec(self):
        self._emit(PacketType.MODE, "<II", 0, 1)  # leaf exec, csl=1 csd=0: 64-bit

    def _psb(self, index):
        self.psbs.append((self.written, index))
        self.last_psb = self.written
        self._emit(PacketType.PSB)
        self._last_ip = None

    def flush_tnt(self):
        count = self._tnt_count
        if count:
            self._timed(self._tnt_time)
            kind = PacketType.TNT_8 if count <= 6 else PacketType.TNT_64
            self._emit(kind, "<B7xQ", count, self._tnt_bits)
            self._tnt_bits = self._tnt_count = 0

    # The flow.

    def enable(self, ip, index):
        """Tracing (re)starts at ``ip``, the ``index``-th traced instruction."""
        if not self.psbs:
            self._psb(index)
            self._tsc()
            self._emit(PacketType.PSBEND)
        else:
            self._tsc(self._timed())
        self._mode_exec()
        self._timed()
        self._ip_packet(PacketType.TIP_PGE, ip)
        self.enabled = True

    def resync(self, ip, index):
        """A periodic PSB+ before the non-branch instruction at ``ip``, if one is due."""
        if self.written - self.last_psb < self.psb_period:
            return
        self.flush_tnt()
        now = self._timed()
        self._psb(index)
        self._tsc(now)
        self._mode_exec()
        self._ip_packet(PacketType.FUP, ip)
        self._emit(PacketType.PSBEND)

    def conditional(self, taken):
        if self._fine and not self._tnt_count:
            self._tnt_time = self.clock()
        self._tnt_bits = self._tnt_bits << 1 | taken
        self._tnt_count += 1
        if self._tnt_count == _MAX_TNT:
            self.flush_tnt()

    def indirect(self, target):
        self.flush_tnt()
        self._timed()
        self._ip_packet(PacketType.TIP, target)

    def branch_out(self, target):
        """A branch to ``target``, outside the code traced (as a PT address filter reports it)."""
        self.flush_tnt()
        self._timed()
        self._ip_packet(PacketType.TIP_PGD, target)
        self.enabled = False

    def leave(self):
        """A syscall or other far transfer out of user space."""
        self.flush_tnt()
        self._timed()
        self._suppressed(PacketType.TIP_PGD)
        self.enabled = False

    def interrupt(self, resume_ip):
        """An asynchronous exit before the instruction at ``resume_ip``."""
        self.flush_tnt()
        self._timed()
        self._ip_packet(PacketType.FUP, resume_ip)
        self._suppressed(PacketType.TIP_PGD)
        self.enabled = False

    def overflow(self):
        """The trace buffer overflowed: packets from here on are lost until ``resume``, and the next IP packet
        compresses against nothing (the decoder forgets the last IP at OVF)."""
        self.flush_tnt()
        self._emit(PacketType.OVF)
        self._last_ip = None

    def resume(self, ip):
        """Tracing continues after an overflow at ``ip``."""
        self._tsc(self._timed())
        self._ip_packet(PacketType.FUP, ip)

    def end(self, stop_ip):
        """Recording stops before the instruction at ``stop_ip``."""
        if self.enabled:
            self.interrupt(stop_ip)

    def snapshot(self):
        """All bytes written so far, leaving the writer open (a live trace read at a stop)."""
        self._drain()
        return bytes(self.data)

    def finish(self):
        """All bytes written, after end()."""
        self._drain()
        self._encoder.close()
        return bytes(self.data)
