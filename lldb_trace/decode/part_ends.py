"""Trimming a DecodedPart's end: the run libipt walked past the bytes it was given.

libipt decodes on from the last packet it read until it needs another, so a
part's last blocks may be instructions its trace does not prove ran.  A piece
of a parallel decode gives them to the next piece (trim_overrun); a trace
file that ends inside a packet drops them behind a gap (end_truncated).
"""

from array import array
from dataclasses import replace

from ..libipt import ErrorCode, InsnClass


def trim_overrun(part, resume_ip, expander):
    """Drop the instructions ``part`` decoded past the end of its piece of the trace.

    A piece ends where the next one's PSB starts.  Cut off there, libipt
    still walks on from the last packet until it needs the next one; that
    straight-line run belongs to the next piece, which resumes at
    ``resume_ip`` (the PSB's FUP).  The run is the trailing blocks joined
    by instructions that need no trace (fall-throughs, direct calls and
    jumps); it is cut at the first ``resume_ip`` in it.  A run with an
    event after it did not overrun.
    """
    chain = _trailing_chain(part, expander)
    addresses = [a for block in chain for a in expander.addresses(part.block_ips[block], part.block_sizes[block])]
    if resume_ip not in addresses:
        return
    keep = addresses.index(resume_ip)
    for _ in chain:
        part.pop_block()
    for block in chain:
        ip, size = part.block_ips[block], part.block_sizes[block]
        if keep >= size:
            end_ip = expander.addresses(ip, size)[-1]
            part.add_raw_blocks(_raw_block(ip, end_ip, size, part.row_classes[block] or InsnClass.OTHER))
        elif keep:
            part.add_raw_blocks(_raw_block(ip, addresses[keep - 1], keep, InsnClass.OTHER))
        keep -= min(keep, size)
    part.end_ip = part.last_instruction = _last_instruction_ip(part, expander)


def end_truncated(part, cut, expander):
    """End ``part`` with a gap saying the trace ends inside a packet (a truncation.Cut).

    The straight-line run libipt walked past the last complete packet is dropped,
    unless the cut packet is the one the run's last branch needed: the thread may
    have stopped anywhere in it (a cut FUP).  It is then shown at the run's first
    instruction, which it reached.  A final end-of-stream gap becomes this gap.
    """
    cut = part.truncation = replace(cut, offset=part.trace_offset + cut.offset)  # in the whole trace
    text = f"the trace is truncated: it ends inside {cut.describe()}; what the thread ran next is unknown"
    sequence = part.block_sequence
    if sequence and not part.block_sizes[sequence[-1]] and part.gaps[-1].code == ErrorCode.EOS:
        part.gaps[-1] = replace(part.gaps[-1], text=text, offset=cut.offset)
        return
    chain = [] if cut.proves_run or expander is None else _trailing_chain(part, expander)
    if chain:
        for _ in chain:
            part.pop_block()
        while part.tsc_items and part.tsc_items[-1] > part.item_count:
            part.tsc_items.pop()
            part.tsc_values.pop()
        part.last_instruction = _last_instruction_ip(part, expander)
        part.end_ip = part.block_ips[chain[0]]
    part.add_gap(ErrorCode.EOS, text, cut.offset - part.trace_offset)


def _trailing_chain(part, expander, limit=4096):
    """The last blocks, back to the first one after an instruction that read trace (or an event, or a gap)."""
    sequence, sizes = part.block_sequence, part.block_sizes
    if not sequence or not sizes[sequence[-1]]:
        return []
    last_event = part.event_items[-1] if part.event_items else -1
    ordinal, first = len(sequence) - 1, part.item_count - sizes[sequence[-1]]
    if first < last_event:
        return []
    while ordinal and len(sequence) - ordinal < limit:
        previous = sequence[ordinal - 1]
        if not sizes[previous] or first - sizes[previous] < last_event:
            break
        if expander.needs_trace(expander.addresses(part.block_ips[previous], sizes[previous])[-1]):
            break
        ordinal -= 1
        first -= sizes[previous]
    return list(sequence[ordinal:])


def _last_instruction_ip(part, expander):
    for ordinal in range(len(part.block_sequence) - 1, -1, -1):
        row = part.block_sequence[ordinal]
        if part.block_sizes[row]:
            return expander.addresses(part.block_ips[row], part.block_sizes[row])[-1]
    return None


def _raw_block(ip, end_ip, size, iclass):
    """A ``pt_block`` as libipt lays it out, for blocks made here rather than by libipt."""
    raw = bytearray(48)
    raw[0:16] = array("Q", (ip, end_ip)).tobytes()
    raw[24:26] = array("H", (iclass,)).tobytes()
    raw[28:30] = array("H", (size,)).tobytes()
    return raw
