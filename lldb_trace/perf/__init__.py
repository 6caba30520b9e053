"""The Linux perf kernel ABI, in one place (plain Python, no ``lldb``, no syscalls).

What <linux/perf_event.h> defines and lldb_trace reads or writes:

- :mod:`.attr`: ``struct perf_event_attr``, the event types and the flags of
  perf_event_open(2);
- :mod:`.mmap_page`: ``struct perf_event_mmap_page``, the header page of an
  event's mapping (ring and AUX control words, perf clock parameters);
- :mod:`.ioctls`: the ``PERF_EVENT_IOC_*`` requests of an event fd;
- :mod:`.records`: the records the kernel writes (header, ``PERF_RECORD_*``
  types, sample_id fields), walked, unpacked and packed.

The tests check every size, offset, flag bit and number here against
``<linux/perf_event.h>`` as the C compiler sees it.  Opening events is
capture's job (``capture/intel_pt/perf_event.py``); what context switch records mean
for a per-cpu trace is the sources' (``sources/context_switches.py``).
Reading and writing perf.data files (a header, the attrs, then these records)
will live here too, in ``perf/data_file.py`` beside :mod:`.records`.
"""

from .attr import perf_event_attr
from .mmap_page import perf_event_mmap_page
from .records import (
    LOSS_RECORD_TYPES,
    PERF_RECORD_SWITCH_CPU_WIDE,
    PerfRecordError,
    RecordHeader,
    SwitchCpuWide,
    pack_lost_record,
    pack_switch_record,
    unpack_switch_record,
    walk_records,
)

__all__ = [
    "LOSS_RECORD_TYPES",
    "PERF_RECORD_SWITCH_CPU_WIDE",
    "PerfRecordError",
    "RecordHeader",
    "SwitchCpuWide",
    "pack_lost_record",
    "pack_switch_record",
    "perf_event_attr",
    "perf_event_mmap_page",
    "unpack_switch_record",
    "walk_records",
]
