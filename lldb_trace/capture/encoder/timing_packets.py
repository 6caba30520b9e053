"""The timing packets of a recorded stream: TSC, and on request MTC, CYC and CBR, from a real clock.

The recorder's TSC runs in nanoseconds (``time.monotonic_ns``).  It pretends
the crystal clock (CTC) ticks every ``CTC_NS`` TSC ticks and the core runs one
cycle per TSC tick, so that libipt, told the same through the bundle's
``timing`` (ClockInfo), turns the packets back into the clock's readings:

- TSC (with a TMA giving the crystal clock at that TSC when MTC is on) in
  every PSB+ and whenever tracing (re)starts;
- MTC when the crystal clock entered a new MTC period since the last timing
  packet; a gap of 256 periods or more is beyond MTC's 8 bits (and one of more
  than 2**16 crystal clocks after a TMA beyond the TMA's bits), so a TSC+TMA
  stands in for it (with a CBR in cycle-accurate mode: libipt calibrates the
  cycle's length from the cycles between two MTCs, which such a gap would
  spoil; a CBR outside PSB+ restarts that calibration);
- CYC (cycle-accurate mode) before every packet that libipt gives a time:
  the cycles since the previous CYC, split at an MTC in between;
- CBR in every PSB+, at the nominal ratio, so a cycle is one TSC tick.

CYC packets count every cycle since the first TSC, across TSC packets and
stretches with tracing off (a TSC comes right after the CYC up to it, from one
clock reading): libipt calibrates the cycle's length from the cycles between
two MTCs.  And it keeps a CYC that follows an MTC relative to
that MTC only when a CYC with cycles came in the MTC's period before it;
where none did, a TSC+TMA is written instead of the MTC.  So the estimates
are the clock's readings.
"""

from ...bundle.model import ClockInfo
from ...libipt.enums import PacketType

CTC_NS = 40  # a 25 MHz crystal clock
NOMINAL_RATIO = 10  # CBR and nominal ratio alike: one cycle per TSC tick
_MTC_BITS = 8  # an MTC carries 8 bits of the period count
_TMA_CTC_BITS = 16  # a TMA carries the crystal clock's low 16 bits


def clock_info(mtc_period, cycle_accurate):
    """The ClockInfo that tells a decoder what TimingPackets wrote."""
    return ClockInfo(
        mtc_period=mtc_period,
        tsc_ctc_ratio=(CTC_NS, 1),
        nominal_ratio=NOMINAL_RATIO if cycle_accurate else None,
        cycle_accurate=cycle_accurate,
    )


class TimingPackets:
    """Decides and writes a stream's timing packets through ``emit(kind, fmt, *values)``."""

    def __init__(self, emit, clock, mtc_period=None, cycle_accurate=False):
        self._emit, self.clock = emit, clock
        self.mtc_period, self.cycle_accurate = mtc_period, cycle_accurate
        if mtc_period is not None:  # how many periods an MTC may be from the last MTC or TMA
            self._mtc_range = 1 << min(_MTC_BITS, _TMA_CTC_BITS - mtc_period)
        self._period = None  # the MTC period of the last TSC/TMA/MTC
        self._last_cycle = None  # the time of the last CYC (or TSC)
        self._cycles_in_period = False  # a CYC with cycles came since the last MTC/TSC

    @property
    def fine(self):
        return self.mtc_period is not None or self.cycle_accurate

    def header(self, now=None):
        """The TSC (+TMA, +CBR) of a PSB+ or of a restart; ``now`` defaults to the clock.

        The writer calls ``before`` first (outside the PSB+), so the cycles up to ``now`` are counted.
        """
        self._full(self.clock() if now is None else now)
        if self.cycle_accurate:
            self._emit(PacketType.CBR, "<B", NOMINAL_RATIO)

    def _full(self, now):
        tsc = now & 0xFFFFFFFFFFFFFF
        self._emit(PacketType.TSC, "<Q", tsc)
        if self.mtc_period is not None:
            self._emit(PacketType.TMA, "<HH", tsc // CTC_NS & 0xFFFF, tsc % CTC_NS)
            self._period = tsc // CTC_NS >> self.mtc_period
        self._last_cycle = tsc
        self._cycles_in_period = False

    def before(self, when):
        """Timing for a packet about something that happened at ``when``: MTC or TSC if due, then CYC."""
        if not self.fine or self._last_cycle is None:
            return
        when = max(when, self._last_cycle)
        if self.mtc_period is not None:
            period = when // CTC_NS >> self.mtc_period
            if period != self._period:
                edge = (period << self.mtc_period) * CTC_NS
                if period - self._period >= self._mtc_range:
                    self._restart(when)
                    return
                self._cycle(edge)
                if self.cycle_accurate and not self._cycles_in_period:
                    self._restart(when)
                    return
                self._emit(PacketType.MTC, "<B", period & 0xFF)
                self._period = period
                self._cycles_in_period = False
        self._cycle(when)

    def _restart(self, when):
        """TSC+TMA (+CBR) in place of an MTC that would say too little."""
        self._cycle(when)
        self._full(when)
        if self.cycle_accurate:
            self._emit(PacketType.CBR, "<B", NOMINAL_RATIO)

    def _cycle(self, when):
        if not self.cycle_accurate:
            return
        cycles = when - self._last_cycle
        self._emit(PacketType.CYC, "<Q", cycles)
        self._last_cycle = when
        self._cycles_in_period = self._cycles_in_period or cycles > 0
