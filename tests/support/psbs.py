"""Every PSB of a trace, found by libipt's own synchronization: where tests cut traces and check cuts."""

from lldb_trace import libipt
from lldb_trace.libipt import LibiptError


def psb_offsets(trace):
    """Offsets of every PSB in ``trace``, in order."""
    offsets = []
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        while True:
            try:
                decoder.sync_forward()
            except LibiptError:
                return offsets
            offsets.append(decoder.sync_offset)
