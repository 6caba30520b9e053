"""A bundle's CPU as libipt's decoders take it: the model for errata, the clocks for timing."""

from .. import libipt
from ..libipt.enums import CpuVendor


def decoder_cpu(cpu_info):
    """The libipt Cpu of a bundle CpuInfo, or None when neither its model nor its clocks are known."""
    clock = cpu_info.clock
    timing = None
    if clock is not None:
        numerator, denominator = clock.tsc_ctc_ratio or (0, 0)
        timing = libipt.Timing(clock.mtc_period or 0, clock.nominal_ratio or 0, denominator, numerator)
    if cpu_info.vendor == "intel":
        return libipt.Cpu(cpu_info.family, cpu_info.model, cpu_info.stepping, timing=timing)
    return libipt.Cpu(0, 0, 0, CpuVendor.UNKNOWN, timing) if timing else None
