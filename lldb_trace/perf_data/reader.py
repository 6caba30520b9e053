"""Reading a perf.data file into a :class:`Recording`: its events, features and the records a trace needs.

The file is mapped, not read: AUXTRACE buffers stay where they are, named by
their offset, and only the records between them are visited (one pass over
the data section).  Anything that is not a well-formed, native-endian,
file-mode perf.data with an Intel PT event is a :class:`PerfDataError`
naming the file, the byte, and what to do.
"""

import mmap
import os
import struct
from dataclasses import dataclass, field

from ..errors import LldbTraceError
from ..perf import attr as perf_attr
from ..perf.auxtrace import (
    AUXTRACE,
    AUXTRACE_INFO,
    AUXTRACE_NAMES,
    PERF_AUXTRACE_INTEL_PT,
    PERF_RECORD_AUXTRACE,
    PERF_RECORD_AUXTRACE_INFO,
    PERF_RECORD_HEADER_ATTR,
    IntelPtInfo,
    unpack_auxtrace,
    unpack_auxtrace_info,
)
from ..perf.data_file import (
    FILE_HEADER_SIZE,
    MAGIC,
    MAGIC_BIG_ENDIAN,
    MAGIC_VERSION_1,
    PIPE_HEADER_SIZE,
    SECTION,
    Feature,
    FileHeader,
    Section,
    unpack_build_ids,
    unpack_string,
)
from ..perf.records import RecordHeader
from ..perf.sideband import PERF_RECORD_SAMPLE, SampleIdLayout
from .sideband_records import SidebandReader

_HEADER = struct.Struct("<IHH")
_ATTR_MIN = perf_attr.PERF_ATTR_SIZE_VER0
_ATTR_FULL = perf_attr.PERF_ATTR_SIZE_VER8  # shorter attrs (older perf) read zero-extended, longer ones cut
_COMPRESSED = (81, 83)  # PERF_RECORD_COMPRESSED, PERF_RECORD_COMPRESSED2
_FEATURE_BITS = frozenset(int(feature) for feature in Feature)  # bit 0 is reserved
_EVENT_NAMES = {(0, 0): "cycles", (0, 1): "instructions", (1, 0): "cpu-clock", (1, 1): "task-clock"}


class PerfDataError(LldbTraceError):
    """The file is not a perf.data that lldb_trace can load; the message says why and what to do."""


@dataclass(frozen=True)
class Event:
    """One event of the attribute table."""

    type: int
    config: int
    sample_type: int
    sample_id_all: bool
    ids: tuple


@dataclass
class Recording:
    """What a perf.data holds that a trace needs; ``data`` is the mapped file (AUXTRACE bytes are read from it)."""

    path: str
    data: object
    intel_pt: IntelPtInfo
    pt_config: int = 0  # the intel_pt event's attr.config: which packets it asked for
    info_offset: int = 0  # where its AUXTRACE_INFO record is, for messages about its words
    cpuid: str | None = None
    build_ids: dict = field(default_factory=dict)  # file name -> hex build-id
    comms: dict = field(default_factory=dict)  # tid -> command name
    pids: dict = field(default_factory=dict)  # tid -> pid
    mmaps: list = field(default_factory=list)  # (time or None, sideband.Mmap), executable only
    buffers: list = field(default_factory=list)  # perf.auxtrace.AuxtraceBuffer, in file order
    aux: list = field(default_factory=list)  # sideband_records.AuxNotice, in file order
    switches: dict = field(default_factory=dict)  # cpu -> [SwitchCpuWide] in file order
    lost_records: int = 0
    exits: set = field(default_factory=set)  # tids of the tasks a PERF_RECORD_EXIT says ended
    features: dict = field(default_factory=dict)  # Feature -> the bytes of its section


def read_recording(path):
    """The Recording of the perf.data at ``path``; PerfDataError if it cannot be used."""
    path = os.path.abspath(os.path.expanduser(str(path)))
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY) if size else b""
    except FileNotFoundError:
        raise PerfDataError(f"{path}: no such file") from None
    except PermissionError:
        raise PerfDataError(f"{path}: permission denied: make it readable (chmod +r)") from None
    except OSError as error:
        raise PerfDataError(f"{path}: cannot read: {error.strerror}") from None
    return _Reader(path, data).read()


class _Reader:
    def __init__(self, path, data):
        self.path, self.data = path, data

    def fail(self, reason):
        raise PerfDataError(f"{self.path}: {reason}")

    def read(self):
        header = self._header()
        events = self._events(header)
        self._check_data(header)
        features = self._features(header)
        recording = self._records(header.data, events)
        recording.features = features
        cpuid = features.get(Feature.CPUID)
        if cpuid is not None:
            recording.cpuid = self._feature_string(cpuid, "HEADER_CPUID")
        build_ids = features.get(Feature.BUILD_ID)
        if build_ids is not None:
            try:
                recording.build_ids = {e.filename: e.build_id for e in unpack_build_ids(build_ids)}
            except ValueError as error:
                self.fail(f"its build-id feature (HEADER_BUILD_ID) is damaged: {error}")
        return recording

    def _header(self):
        data = self.data
        if len(data) < 8:
            self.fail(f"{len(data)} bytes: too short to be a perf.data file")
        magic = bytes(data[:8])
        if magic == MAGIC_BIG_ENDIAN:
            self.fail("a perf.data written on a big-endian machine: convert it there (perf inject) or record on x86")
        if magic == MAGIC_VERSION_1:
            self.fail("a version 1 perf.data (PERFFILE) from a perf older than Linux 3.x: record it again")
        if magic != MAGIC:
            self.fail("not a perf.data file (no PERFILE2 magic)")
        if len(data) >= 16 and struct.unpack_from("<Q", data, 8)[0] == PIPE_HEADER_SIZE:
            self.fail(
                "a pipe-mode perf.data (perf record -o -), which lldb_trace cannot load yet: "
                "write it as a file with 'perf inject -i FILE -o FILE.data'"
            )
        if len(data) < FILE_HEADER_SIZE:
            self.fail(f"{len(data)} bytes: the file ends inside its {FILE_HEADER_SIZE}-byte header (truncated?)")
        header = FileHeader.unpack(data)
        if header.size < FILE_HEADER_SIZE:
            self.fail(f"its header says it is {header.size} bytes, less than perf's {FILE_HEADER_SIZE}: it is damaged")
        if header.size != FILE_HEADER_SIZE:
            self.fail(
                f"its header is {header.size} bytes, not {FILE_HEADER_SIZE}: a perf.data format newer than "
                "lldb_trace reads"
            )
        unknown = sorted(header.features - _FEATURE_BITS)
        if unknown:
            self.fail(
                f"its header sets feature bit {unknown[0]}, unknown to lldb_trace (a perf newer than Linux 6.18?): "
                "please report it with the perf version that wrote the file"
            )
        for name, section in (("attribute", header.attrs), ("data", header.data)):
            if section.end > len(data):
                self.fail(
                    f"its {name} section ({section.size} bytes at byte {section.offset}) runs past the end of the "
                    f"file ({len(data)} bytes): the file is truncated"
                )
        return header

    def _events(self, header):
        if header.attr_size < _ATTR_MIN + SECTION.size:
            self.fail(f"its attribute entries are {header.attr_size} bytes, too small for a perf_event_attr")
        if not header.attrs.size or header.attrs.size % header.attr_size:
            self.fail(f"its attribute section ({header.attrs.size} bytes) is not whole entries: the file is damaged")
        events = []
        for start in range(header.attrs.offset, header.attrs.end, header.attr_size):
            raw = bytes(self.data[start : start + header.attr_size - SECTION.size])
            attr = perf_attr.perf_event_attr.from_buffer_copy(raw[:_ATTR_FULL].ljust(_ATTR_FULL, b"\0"))
            ids = Section(*SECTION.unpack_from(self.data, start + header.attr_size - SECTION.size))
            if ids.end > len(self.data) or ids.size % 8:
                self.fail(f"the ids of event {len(events)} lie outside the file: the file is truncated or damaged")
            id_list = struct.unpack_from(f"<{ids.size // 8}Q", self.data, ids.offset) if ids.size else ()
            events.append(Event(attr.type, attr.config, attr.sample_type, bool(attr.sample_id_all), id_list))
        return events

    def _features(self, header):
        """``{Feature: bytes}`` of the features lldb_trace reads; the table follows the data section."""
        table = header.data.end
        found = {}
        for k, bit in enumerate(sorted(header.features)):
            at = table + k * SECTION.size
            if at + SECTION.size > len(self.data):
                self.fail("the file ends inside its feature table: it is truncated (was perf record interrupted?)")
            section = Section(*SECTION.unpack_from(self.data, at))
            if section.end > len(self.data):
                self.fail(f"its {Feature(bit).name} feature runs past the end of the file: the file is truncated")
            found[bit] = memoryview(self.data)[section.offset : section.end]
        return found

    def _feature_string(self, data, name):
        try:
            return unpack_string(data)[0]
        except ValueError as error:
            self.fail(f"its {name} feature is damaged: {error}")

    def _check_data(self, header):
        if header.data.size == 0:
            self.fail("its data section is empty: perf record was stopped before it wrote anything, or it failed")

    def _records(self, section, events):
        """One pass over the data section, keeping what a trace needs."""
        layouts = _layouts(events, self.fail)
        found = None
        pending = []  # records met before AUXTRACE_INFO says which event is the trace
        offset = section.offset
        data = self.data
        end = section.end
        while offset < end:
            if offset + _HEADER.size > end:
                self.fail(f"the file ends inside a record header at byte {offset}: it is truncated")
            kind, misc, size = _HEADER.unpack_from(data, offset)
            if size < _HEADER.size:
                self.fail(f"the record at byte {offset} has size {size}: the file is damaged")
            if offset + size > end:
                self.fail(f"the record at byte {offset} ({size} bytes) runs past the end of the data: it is truncated")
            if kind in _COMPRESSED:
                self.fail("its records are compressed (perf record -z): decompress with 'perf inject -i FILE -o NEW'")
            if kind == PERF_RECORD_HEADER_ATTR:
                self.fail("a pipe-mode stream saved to a file: convert it with 'perf inject -i FILE -o FILE.data'")
            if kind == PERF_RECORD_AUXTRACE_INFO:
                found = found or self._auxtrace_info(offset, misc, size, events)
            elif kind == PERF_RECORD_AUXTRACE:
                if size < AUXTRACE.size:
                    self.fail(f"the AUXTRACE record at byte {offset} is {size} bytes: the file is damaged")
                buffer = unpack_auxtrace(data, RecordHeader(offset, kind, misc, size))
                if buffer.file_offset + buffer.size > end:
                    self.fail(
                        f"the AUXTRACE record at byte {offset} says {buffer.size} bytes of trace follow, past the "
                        f"end of the data ({end - buffer.file_offset} left): the file is truncated"
                    )
                pending.append(buffer)
                offset += size + buffer.size
                continue
            elif kind < 64:
                pending.append((kind, misc, offset, size))
            offset += size
        if found is None:
            names = ", ".join(sorted({_event_name(e) for e in events}))
            self.fail(f"it holds no Intel PT trace (its events: {names}): record one with 'perf record -e intel_pt//u'")
        info, info_offset = found
        config = next(event.config for event in events if event.type == info.pmu_type)
        recording = Recording(self.path, data, info, config, info_offset)
        sideband = SidebandReader(recording, layouts, self.fail)
        for item in pending:
            if isinstance(item, tuple):
                sideband.add(*item)
            else:
                recording.buffers.append(item)
        return recording

    def _auxtrace_info(self, offset, misc, size, events):
        """``(IntelPtInfo, offset)`` of the AUXTRACE_INFO record at ``offset`` (the first one is the trace's)."""
        if size < AUXTRACE_INFO.size:
            self.fail(f"the AUXTRACE_INFO record at byte {offset} is {size} bytes, too short for its fields: "
                      "the file is damaged")  # fmt: skip
        kind, words = unpack_auxtrace_info(self.data, RecordHeader(offset, PERF_RECORD_AUXTRACE_INFO, misc, size))
        if kind != PERF_AUXTRACE_INTEL_PT:
            what = AUXTRACE_NAMES.get(kind, f"AUX trace type {kind}")
            self.fail(f"it holds a {what} trace, not Intel PT: lldb_trace decodes Intel PT only")
        if len(words) < IntelPtInfo.MIN_WORDS:
            self.fail(f"its Intel PT AUXTRACE_INFO has {len(words)} fields, fewer than any perf writes: it is damaged")
        info = IntelPtInfo.unpack(words)
        if not any(event.type == info.pmu_type for event in events):
            self.fail(f"its AUXTRACE_INFO names PMU type {info.pmu_type}, which none of its events has: it is damaged")
        return info, offset


def _layouts(events, fail):
    """A function giving the SampleIdLayout of a record (None: no sample_id), found by its event."""
    with_ids = [e for e in events if e.sample_id_all]
    if not with_ids:
        return lambda data, header: None
    types = {e.sample_type for e in with_ids}
    if len(types) == 1:
        layout = SampleIdLayout(types.pop())
        return lambda data, header: None if header.type == PERF_RECORD_SAMPLE else layout
    by_id = {i: SampleIdLayout(e.sample_type) for e in with_ids for i in e.ids}
    if not all(e.sample_type & (1 << 16) for e in with_ids):
        fail("its events have different sample_id layouts and no PERF_SAMPLE_IDENTIFIER: records cannot be matched")

    def layout_of(data, header):
        if header.type == PERF_RECORD_SAMPLE or header.size < _HEADER.size + 8:
            return None
        (event_id,) = struct.unpack_from("<Q", data, header.offset + header.size - 8)
        return by_id.get(event_id)

    return layout_of


def _event_name(event):
    return _EVENT_NAMES.get((event.type, event.config), f"type {event.type} config {event.config:#x}")
