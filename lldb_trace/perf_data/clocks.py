"""What a perf.data's AUXTRACE_INFO says about time, checked: TSC to perf time, and what MTC and CYC packets mean.

The words are believed only within the ranges the hardware and the kernel
can give them, the same ranges a JSON bundle's schema allows
(schemas/intel-pt.json): ``time_mult`` is a non-zero u32 (0 would make every
time ``time_zero``), ``time_shift`` shifts 64-bit values (0 to 63), the MTC
period is IA32_RTIT_CTL's 4-bit MTCFreq, the TSC:CTC ratio's terms are
CPUID.15H's 32-bit registers and the nominal ratio is MSR_PLATFORM_INFO's
byte.  A word outside its range raises PerfDataError naming the
AUXTRACE_INFO record and its byte offset: times computed from it would be
garbage, or would not fit in memory.
"""

from ..bundle.model import ClockInfo, TscConversion
from .reader import PerfDataError

U32_MAX = (1 << 32) - 1
MAX_MTC_PERIOD = 15
MAX_NOMINAL_RATIO = 255


def tsc_conversion(recording):
    """The TscConversion of the recording's AUXTRACE_INFO, or None when the kernel gave perf no time_zero."""
    info = recording.intel_pt
    if not info.cap_user_time_zero:
        return None
    _check(recording, "time_mult", info.time_mult, 1, U32_MAX)
    _check(recording, "time_shift", info.time_shift, 0, 63)
    return TscConversion(time_mult=info.time_mult, time_shift=info.time_shift, time_zero=info.time_zero)


def clock_info(recording):
    """What the event's MTC and CYC packets mean (AUXTRACE_INFO's masks and ratios), or None without them."""
    info, config = recording.intel_pt, recording.pt_config
    mtc, cyc = bool(config & info.mtc_bit), bool(config & info.cyc_bit)
    if not (mtc or cyc):
        return None
    mask = info.mtc_freq_bits
    period = (config & mask) >> ((mask & -mask).bit_length() - 1) if mtc and mask else None
    if period is not None:
        _check(recording, "mtc_freq_bits", period, 0, MAX_MTC_PERIOD, "gives an MTC period of")
    ratio = (info.tsc_ctc_ratio_n, info.tsc_ctc_ratio_d)
    for name, value in zip(("tsc_ctc_ratio_n", "tsc_ctc_ratio_d"), ratio, strict=True):
        _check(recording, name, value, 0, U32_MAX)
    _check(recording, "max_nonturbo_ratio", info.max_nonturbo_ratio, 0, MAX_NOMINAL_RATIO)
    return ClockInfo(
        mtc_period=period,
        tsc_ctc_ratio=ratio if all(ratio) else None,
        nominal_ratio=info.max_nonturbo_ratio or None,
        cycle_accurate=cyc,
    )


def _check(recording, name, value, low, high, says="is"):
    if not low <= value <= high:
        raise PerfDataError(
            f"{recording.path}: the AUXTRACE_INFO record at byte {recording.info_offset}: its {name} {says} "
            f"{value}, outside {low}..{high}: the file is damaged"
        )
