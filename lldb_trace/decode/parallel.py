"""Decoding a large trace in pieces, in parallel, with the same result as one pass.

The trace is cut at PSBs into one piece per worker (workers.py: every core by
default).  Each piece is decoded by its own libipt decoder in a forked child
process, and the parent decodes the first piece itself: processes rather than
threads, because a crash inside libipt (a corrupt trace) must end a child, not
the debugger, and because the fallback loop's per-block work is Python.  A
child writes its piece (with its call forest, when one is wanted) as raw
columns to a file in memory, which the parent reads straight into their
final arrays (part_transfer.py), so each piece exists once.  A child that
dies costs a gap item, never the debugger.

Cutting a trace at a PSB is where LLDB's own decoder goes wrong (a spurious
end-of-stream error when the PSB precedes a branch; a doubled instruction
when a piece ends in disable/enable).  Here each piece is decoded up to the
next piece's PSB, its overrun trimmed at the ip where the next piece resumes,
and a piece's end of stream is no error: tests check the joined result
against a single pass.  Only the last piece ends where the file does, so only
its end can be a truncated file's (a packet cut short).
"""

import contextlib
import json
import mmap
import os
import signal
import tempfile

from .. import libipt, progress
from ..libipt import LibiptError, StatusFlag
from ..progress import WorkInterruptedError
from .decode_loop import decode_part
from .decoded_thread import DecodedPart
from .part_transfer import PartTransferError, read_part, write_part
from .piece_forest import build_piece

PIECE_MIN_BYTES = 64 * 1024  # smaller traces decode in one pass: forking costs more than it saves
CHILD_CRASHED = -1000  # the gap code for a piece whose decoder process died
# A child's piece costs it one more step than the parent's: writing it back, its call forest included (at 1 GB,
# 2.7 to 3.7 s after 38 to 54 s of decoding and building).  The join waits for both, so the parent, whose own
# piece needs no writing, takes that much more of the trace: the children end when it does.
PARENT_WEIGHT = 1.07
_FIRST_WINDOW = 1 << 16  # bytes searched for a PSB at first (PSBs come every few kilobytes), then 4 times more


def psb_offsets(trace):
    """Offsets of every PSB in ``trace``, found by libipt's own synchronization."""
    offsets = []
    with libipt.PacketDecoder(libipt.Config(trace)) as decoder:
        while True:
            try:
                decoder.sync_forward()
            except LibiptError:
                return offsets
            offsets.append(decoder.sync_offset)


def first_psb_from(trace, offset):
    """The offset of the first PSB at or after ``offset``, or None: libipt's synchronization over the bytes from
    there, a window at a time, so that planning a cut reads kilobytes, not the whole trace."""
    window = _FIRST_WINDOW
    while True:
        with libipt.PacketDecoder(libipt.Config(memoryview(trace)[offset : offset + window])) as decoder:
            try:
                decoder.sync_forward()
                return offset + decoder.sync_offset
            except LibiptError:
                if offset + window >= len(trace):
                    return None
        window *= 4


def resume_ip(trace, cpu, offset):
    """The ip at which decoding resumes from the PSB at ``offset`` (its FUP), or None if tracing was off.

    Raises LibiptError when the PSB+ there cannot be read (corrupt, or cut off by the end of the file).
    """
    with libipt.QueryDecoder(libipt.Config(trace, cpu)) as decoder:
        status, ip = decoder.sync_set(offset)
    return None if status & StatusFlag.IP_SUPPRESSED else ip


def _resumable_cuts(trace, cpu, planned):
    """``{cut: resume ip}`` for the planned pieces' ends where a decoder can start.

    A piece cannot start at a PSB whose PSB+ cannot be read: the piece
    before it runs on through it, as a single pass does (a file cut inside
    that PSB+ then ends in the piece that walked into it).
    """
    cuts = {}
    for _, end in planned[:-1]:
        try:
            cuts[end] = resume_ip(trace, cpu, end)
        except LibiptError:
            continue
    return cuts


def plan_pieces(trace, pieces, first_weight=1.0):
    """``[(start, end)]``: ``pieces`` stretches, each starting at a PSB (the first at 0), of similar size but the
    first, which is ``first_weight`` times as large as the others."""
    cuts, shares = [], first_weight + pieces - 1
    for k in range(1, pieces):
        at = int(len(trace) * (first_weight + k - 1) / shares)
        found = first_psb_from(trace, max(at, cuts[-1] + 1 if cuts else 0))
        if found is None:
            break
        cuts.append(found)
    bounds = [0, *cuts, len(trace)]
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1) if bounds[k] < bounds[k + 1]]


def piece_jobs(trace, cpu, pieces, first_weight=1.0):
    """``[(start, end, resume ip of the piece after it or None)]``: ``trace`` cut into at most ``pieces`` that
    decode_piece decodes anywhere (here, in a child, on another machine) and DecodedThread joins; the first
    ``first_weight`` times as large as the others (plan_pieces)."""
    cuts = _resumable_cuts(trace, cpu, plan_pieces(trace, pieces, first_weight))
    bounds = [0, *cuts, len(trace)]
    return [(bounds[k], bounds[k + 1], cuts.get(bounds[k + 1])) for k in range(len(bounds) - 1)]


def decode_piece(trace, cpu, image, expander, job, task=progress.QUIET, forest=None):
    """The finished DecodedPart of ``job``: ``(start, end, resume ip of the piece after it or None)``.

    The piece is read in place (a memoryview), so a mapped trace file is not copied.  ``forest``, a
    ForestMaker, builds the piece's call forest there too (its ``piece_forest``).
    """
    start, end, next_ip = job
    piece = memoryview(trace)[start:end]
    part = decode_part(piece, cpu, image, expander, start, False, end == len(trace), task)
    if next_ip is not None:
        part.trim_overrun(next_ip, expander)
    part.finish()
    if forest is not None:
        part.piece_forest = _piece_forest(part, job, expander, forest)
    return part


def _piece_forest(part, job, expander, forest):
    """The piece's call forest, or None if building it failed: the join then builds the piece itself, so a
    fault there costs time, never the decode (in a child, the whole piece).  Its task is one the parent's
    user sees and may interrupt; in a child, nobody's."""
    start, end, next_ip = job
    with progress.task(f"Building the call tree of trace bytes {start}..{end}", part.item_count) as building:
        try:
            return build_piece(part, next_ip, expander, forest, start > 0, building)
        except WorkInterruptedError:
            raise
        except Exception:  # any fault: the single pass's build is the fallback
            return None


class ForestMaker:
    """What building a piece's call forest needs besides the piece: the modules' functions and PLTs."""

    def __init__(self, functions, plt):
        self.functions, self.plt = functions, plt


def decode_pieces(trace, cpu, image, expander, pieces, task=progress.QUIET, forest=None):
    """DecodedParts of ``trace`` cut into ``pieces`` (see plan_pieces), decoded concurrently.

    ``task`` hears the first piece's progress here, then each piece's end; if it is interrupted,
    the children still decoding are killed.  ``forest`` (a ForestMaker) has each piece's call forest
    built where it is decoded, for the call forest to join.
    """
    decoder = _PieceDecoder(trace, cpu, image, expander, forest)
    jobs = piece_jobs(trace, cpu, pieces, PARENT_WEIGHT if forest is not None else 1.0)
    children = [decoder.fork(job) for job in jobs[1:]]
    try:
        parts = [decoder.decode(jobs[0], task)]
        for k, (child, job) in enumerate(zip(children, jobs[1:], strict=False)):
            parts.append(decoder.collect(child, job))
            children[k] = None
            task.at(job[1])
    except BaseException:
        for child in children:
            _kill(child)
        raise
    return parts


def _kill(child):
    if child is None:
        return
    pid, channel = child
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    channel.close()


def _read_back(channel):
    """The part a child wrote to ``channel``, read from a mapping of it; None if it is incomplete.

    The mapping is not closed here: a piece forest's columns stay in it until joined (part_transfer.py),
    and it goes once nothing refers to it.
    """
    size = channel.seek(0, os.SEEK_END)
    if not size:
        return None
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)  # mapped whole at once, not a page per fault
    mapped = mmap.mmap(channel.fileno(), size, flags, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        return read_part(memoryview(mapped))
    except (PartTransferError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _file_in_memory():
    """Where a child writes its piece: a memfd, written at memory speed while the parent still decodes its own
    (a pipe makes the child wait for the parent to read), and gone once both have closed it; a temporary file
    where there is no memfd."""
    try:
        return os.fdopen(os.memfd_create("lldb-trace-piece"), "w+b")
    except (AttributeError, OSError):  # no memfd here, or none allowed
        return tempfile.TemporaryFile()


class _PieceDecoder:
    """Decodes pieces ``(start, end, next piece's resume ip)`` of one trace, here or in a child."""

    def __init__(self, trace, cpu, image, expander, forest):
        self.trace, self.cpu, self.image, self.expander, self.forest = trace, cpu, image, expander, forest

    def decode(self, job, task=progress.QUIET):
        return decode_piece(self.trace, self.cpu, self.image, self.expander, job, task, self.forest)

    def fork(self, job):
        """Start a child decoding ``job`` into a file in memory; ``(pid, the file)``, or None if fork failed."""
        try:
            channel = _file_in_memory()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            channel.close()
            return None
        if pid == 0:  # the child: decode, send, and leave without running any of the parent's cleanup
            status = 1
            try:
                progress.use(None)  # only the parent may talk to the debugger
                write_part(self.decode(job), channel, release=True)
                channel.flush()
                status = 0
            finally:
                os._exit(status)
        return pid, channel

    def collect(self, child, job):
        """The child's DecodedPart; a single gap item if it died; decoded here if it never started."""
        if child is None:
            return self.decode(job)
        pid, channel = child
        with channel:
            with contextlib.suppress(ChildProcessError):  # if someone else reaped it, the data tells
                os.waitpid(pid, 0)
            received = _read_back(channel)
        if received is not None:
            return received
        part = DecodedPart(job[0])
        part.add_gap(CHILD_CRASHED, f"the decoder died on trace bytes {job[0]}..{job[1]}", 0)
        part.finish()
        return part
