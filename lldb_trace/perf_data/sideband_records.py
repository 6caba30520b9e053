"""The sideband records of a perf.data, read into its Recording: tasks, mappings, AUX notices, context switches.

A record is believed only once it is checked, so that no garbled field
becomes a thread, a module or a time:

- it must hold its fixed fields and, after them, its event's sample_id;
- a pid or tid must be one a Linux task can have (pid_t is a signed 32-bit
  int).  0 (the idle task) and -1 (unknown: kernel mappings, perf's own
  events) are no thread of any process: they are skipped, as a JSON bundle,
  whose ids start at 1, never names them;
- a mapping must end inside the 64-bit address space.

Which process a thread belongs to comes from COMM, FORK and ITRACE_START,
and, where those do not say, from the pid and tid of any record's
sample_id (whose task wrote it).

A record that breaks these raises PerfDataError (through ``fail``) naming
the record and its byte offset: the file is damaged, and guessing past it
would put instructions in the wrong thread or module.
"""

import struct
from typing import NamedTuple

from ..perf.records import PERF_RECORD_SWITCH_CPU_WIDE, RecordHeader, SwitchCpuWide
from ..perf.sideband import (
    AUX,
    FORK_EXIT,
    MMAP,
    MMAP2,
    PERF_RECORD_AUX,
    PERF_RECORD_COMM,
    PERF_RECORD_EXIT,
    PERF_RECORD_FORK,
    PERF_RECORD_ITRACE_START,
    PERF_RECORD_MMAP,
    PERF_RECORD_MMAP2,
    TASK_IDS,
    read_name,
    unpack_mmap,
)

_HEADER_SIZE = 8
_SWITCH_OUT = 1 << 13
_SWITCH_PREEMPT = 1 << 14
_LOST = (2, 13)  # PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES
_NO_TASK = (0, 0xFFFFFFFF)
MAX_TASK_ID = 0x7FFFFFFF
_ADDRESS_SPACE = 1 << 64
# record type -> (its name in messages, the size of its fixed fields)
_KNOWN = {
    PERF_RECORD_MMAP: ("MMAP", MMAP.size),
    PERF_RECORD_COMM: ("COMM", TASK_IDS.size),
    PERF_RECORD_FORK: ("FORK", FORK_EXIT.size),
    PERF_RECORD_EXIT: ("EXIT", FORK_EXIT.size),
    PERF_RECORD_MMAP2: ("MMAP2", MMAP2.size),
    PERF_RECORD_AUX: ("AUX", AUX.size),
    PERF_RECORD_ITRACE_START: ("ITRACE_START", TASK_IDS.size),
    PERF_RECORD_SWITCH_CPU_WIDE: ("context switch", TASK_IDS.size),
}


class AuxNotice(NamedTuple):
    """A PERF_RECORD_AUX: ``size`` bytes landed at ``offset`` of the AUX area of ``cpu`` or ``tid`` (None if
    its sample_id does not say), with the kernel's ``flags`` (TRUNCATED, PARTIAL...); ``record`` is its byte."""

    cpu: int | None
    tid: int | None
    offset: int
    size: int
    flags: int
    record: int


class SidebandReader:
    """Adds each record a trace needs to ``recording``; ``layouts(data, header)`` gives a record's sample_id layout."""

    def __init__(self, recording, layouts, fail):
        self.recording, self.layouts, self.fail = recording, layouts, fail
        self.data = recording.data

    def add(self, kind, misc, offset, size):
        if kind in _LOST:
            self.recording.lost_records += 1
        if kind not in _KNOWN:
            return
        name, fixed = _KNOWN[kind]
        header = RecordHeader(offset, kind, misc, size)
        layout = self.layouts(self.data, header)
        id_size = layout.size if layout else 0
        if size < _HEADER_SIZE + fixed + id_size:
            self.fail(
                f"the {name} record at byte {offset} is {size} bytes, too short for its fields and sample_id "
                f"({_HEADER_SIZE + fixed + id_size} bytes): the file is damaged"
            )
        sample = layout.unpack(self.data, offset + size) if layout else None
        if sample is not None and _is_task(sample.pid) and _is_task(sample.tid):  # whose record it is
            self.recording.pids.setdefault(sample.tid, sample.pid)
        body = offset + _HEADER_SIZE
        if kind in (PERF_RECORD_COMM, PERF_RECORD_ITRACE_START, PERF_RECORD_FORK, PERF_RECORD_EXIT):
            self._task(header, name, body, id_size)
        elif kind in (PERF_RECORD_MMAP, PERF_RECORD_MMAP2):
            self._mmap(header, name, id_size, sample)
        elif kind == PERF_RECORD_AUX:
            aux_offset, aux_size, flags = AUX.unpack_from(self.data, body)
            cpu, tid = (sample.cpu, sample.tid) if sample else (None, None)
            self.recording.aux.append(AuxNotice(cpu, tid, aux_offset, aux_size, flags, offset))
        else:
            self._switch(header, name, body, sample)

    def task_id(self, value, name, offset, what="tid"):
        """``value`` as a task id; None for the idle task and -1; PerfDataError for one no task can have."""
        if value is None or value in _NO_TASK:
            return None
        if value > MAX_TASK_ID:
            self.fail(
                f"the {name} record at byte {offset} names {what} {value}, which no Linux task can have "
                f"(at most {MAX_TASK_ID}): the file is damaged"
            )
        return value

    def _task(self, header, name, body, id_size):
        recording, offset = self.recording, header.offset
        if header.type in (PERF_RECORD_FORK, PERF_RECORD_EXIT):
            pid, _ppid, tid, _ptid, _time = FORK_EXIT.unpack_from(self.data, body)
        else:
            pid, tid = TASK_IDS.unpack_from(self.data, body)
        pid, tid = self.task_id(pid, name, offset, "pid"), self.task_id(tid, name, offset)
        if tid is None:
            return
        if header.type == PERF_RECORD_COMM:
            recording.comms[tid] = read_name(self.data, body + TASK_IDS.size, offset + header.size - id_size)
        if header.type == PERF_RECORD_EXIT:
            recording.exits.add(tid)
        if pid is not None:
            recording.pids[tid] = pid

    def _mmap(self, header, name, id_size, sample):
        try:
            mapping = unpack_mmap(self.data, header, id_size)
        except (ValueError, struct.error):
            self.fail(f"the {name} record at byte {header.offset} is too short for its fields: the file is damaged")
        if mapping.addr + mapping.length > _ADDRESS_SPACE:
            self.fail(
                f"the {name} record at byte {header.offset} maps {mapping.length} bytes at {mapping.addr:#x}, "
                "past the end of the address space: the file is damaged"
            )
        pid = self.task_id(mapping.pid, name, header.offset, "pid")
        if mapping.executable and pid is not None:
            self.recording.mmaps.append((sample.time if sample else None, mapping))

    def _switch(self, header, name, body, sample):
        offset = header.offset
        if sample is None or sample.cpu is None or sample.time is None or sample.tid is None:
            self.fail(
                f"the context switch record at byte {offset} has no cpu, time or tid (its event's sample_type "
                "lacks PERF_SAMPLE_CPU, TIME or TID): its cpu's trace cannot be split among threads"
            )
        next_pid, next_tid = TASK_IDS.unpack_from(self.data, body)
        pid, tid = self.task_id(sample.pid, name, offset, "pid"), self.task_id(sample.tid, name, offset)
        self.task_id(next_pid, name, offset, "pid")
        self.task_id(next_tid, name, offset)
        out, preempted = bool(header.misc & _SWITCH_OUT), bool(header.misc & _SWITCH_PREEMPT)
        switch = SwitchCpuWide(out, preempted, sample.pid, sample.tid, next_pid, next_tid, sample.time)
        self.recording.switches.setdefault(sample.cpu, []).append(switch)
        if tid is not None and pid is not None:
            self.recording.pids.setdefault(tid, pid)


def _is_task(value):
    return value is not None and 0 < value <= MAX_TASK_ID
