"""Perfetto's protobuf trace: a track per thread, a slice (begin and end TrackEvents) per call, gaps as instants.

The messages are Perfetto's own (the ``perfetto`` package's generated
``perfetto_trace_pb2``).  A trace file is a ``Trace`` message, a repeated
field 1 of TracePackets; each packet is serialized and appended with its
field tag and length as soon as it is made, so the file is written
incrementally.  Function names are interned: a name's text goes once, in
the first packet that uses it, with the packet sequence's incremental state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import LldbTraceError

if TYPE_CHECKING:
    from .stacks import Job, ThreadCalls

SEQUENCE = 1  # every packet is written by one "producer" sequence
THREAD_UUID_BASE = 1 << 32  # thread tracks' uuids; a process track's uuid is its pid
GAP_NAME, ITEM_ANNOTATION, ERROR_ANNOTATION = 1, 1, 2  # fixed interned ids (names get ids from 2 on)


class PerfettoUnavailableError(LldbTraceError):
    """The ``perfetto`` or ``protobuf`` package is missing or too old for Perfetto's generated protos."""


def protos() -> Any:
    """The perfetto_trace_pb2 module, or a one-line error saying what to install."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except Exception as error:  # ImportError, or protobuf's VersionError (a runtime older than the generated code)
        raise PerfettoUnavailableError(
            f"Perfetto's trace protos cannot be loaded ({error}): pip install 'perfetto>=0.59,<0.60' 'protobuf>=6.31.1'"
        ) from None
    return perfetto_trace_pb2


def write(out: BinaryIO, threads: Iterable[ThreadCalls], job: Job) -> None:
    """Write ``threads`` (ThreadCalls, one after the other) to the binary file ``out``."""
    writer = _Writer(out, protos(), job)
    for calls in threads:
        writer.thread(calls)


class _Writer:
    def __init__(self, out, pb, job):
        self.out, self.pb, self.job = out, pb, job
        self.interned = {}  # Names id -> interned event name id
        self.processes = set()
        self.first = True

    def packet(self, **fields):
        """A TracePacket of this sequence (the first one clears the incremental state, the rest use it)."""
        flags = self.pb.TracePacket
        packet = self.pb.TracePacket(trusted_packet_sequence_id=SEQUENCE, **fields)
        packet.sequence_flags = flags.SEQ_INCREMENTAL_STATE_CLEARED if self.first else flags.SEQ_NEEDS_INCREMENTAL_STATE
        if self.first:
            self.first = False
            interned = packet.interned_data
            interned.event_names.add(iid=GAP_NAME, name="gap")
            interned.debug_annotation_names.add(iid=ITEM_ANNOTATION, name="first item")
            interned.debug_annotation_names.add(iid=ERROR_ANNOTATION, name="error")
        return packet

    def emit(self, packet):
        data = packet.SerializeToString()
        size = len(data)
        self.out.write(b"\n" + (bytes((size,)) if size < 0x80 else _varint(size)) + data)  # b"\n": field 1, LEN

    def thread(self, calls):
        pb = self.pb
        if calls.pid not in self.processes:
            self.processes.add(calls.pid)
            descriptor = pb.TrackDescriptor(uuid=calls.pid, description=self.job.description)
            descriptor.process.pid = calls.pid
            descriptor.process.process_name = calls.process_name
            self.emit(self.packet(track_descriptor=descriptor))
        track = THREAD_UUID_BASE + calls.tid
        descriptor = pb.TrackDescriptor(uuid=track, parent_uuid=calls.pid)
        descriptor.thread.pid, descriptor.thread.tid = calls.pid, calls.tid
        descriptor.thread.thread_name = calls.thread_name
        self.emit(self.packet(track_descriptor=descriptor))
        # One begin and one end packet are reused: setting a few fields and serializing again is about twice
        # as fast as building a packet per event.
        begin = self.packet(track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=track))
        item = begin.track_event.debug_annotations.add(name_iid=ITEM_ANNOTATION)
        end = self.packet(track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END, track_uuid=track))
        firsts = calls.first
        scale = 1 if self.job.axis.timed else 1000  # item indices: 1 µs each, as in the Chrome JSON
        for kind, number, name, at in calls.walk(f"Exporting {calls.thread_name} to Perfetto"):
            if kind == "O":
                begin.timestamp, item.int_value = at * scale, int(firsts[number])
                if name in self.interned:
                    begin.track_event.name_iid = self.interned[name]
                    self.emit(begin)
                else:
                    self.emit(self.interning(begin, name))
            elif kind == "C":
                end.timestamp = at * scale
                self.emit(end)
            else:
                self.emit(self.gap(track, at * scale, *calls.gaps[number]))

    def gap(self, track, at, item, _at, text):
        """An instant event where the trace has a gap, with the gap's item index and error."""
        packet = self.packet(timestamp=at)
        event = packet.track_event
        event.type, event.track_uuid, event.name_iid = self.pb.TrackEvent.TYPE_INSTANT, track, GAP_NAME
        event.debug_annotations.add(name_iid=ITEM_ANNOTATION, int_value=item)
        event.debug_annotations.add(name_iid=ERROR_ANNOTATION, string_value=text)
        return packet

    def interning(self, begin, name):
        """A copy of ``begin`` that carries the text of function ``name`` (a Names id) with its new interned id."""
        iid = self.interned[name] = len(self.interned) + GAP_NAME + 1
        packet = self.pb.TracePacket()
        packet.CopyFrom(begin)
        packet.track_event.name_iid = iid
        packet.interned_data.event_names.add(iid=iid, name=self.job.names.labels[name])
        return packet


def _varint(value):
    encoded = bytearray()
    while value > 0x7F:
        encoded.append(value & 0x7F | 0x80)
        value >>= 7
    encoded.append(value)
    return bytes(encoded)
