"""Building a thread's call forest in one pass over the branches that change frames.

Blocks end at every call, return and indirect jump, so the storage already
says where each of them is: numpy picks those blocks (and the gaps, and the
blocks that hold a direct jump into another function) out of millions, and
only they are visited, in trace order, with the enable/disable events merged
in.  What each does to the open frames:

- a call opens a frame at the next item; a call whose callee ran untraced
  (tracing stops after it and resumes at its return address: the live
  recorder's vdso, a PT address filter) opens none;
- a return closes the innermost frame.  One that lands elsewhere than that
  frame's return address left it non-locally; if it lands inside a function
  open further out (a caught exception's landing pad, a context switched
  back to), the frames in between are closed too.  One that lands in no open
  function switched to another context (swapcontext, setcontext): the frame
  stays open, suspended, and a "switched" frame opens for the code it went
  to, whose callers are on another stack.  Returning out of a tree's first
  frame means it was called before the trace began: an "untraced start"
  frame is put above it, named by where the return went;
- an indirect jump that lands inside a function open further out (longjmp)
  closes the frames in between; one, or a direct jump, to the first
  instruction of another function is a tail call: that function replaces the
  frame.  Calls into a PLT stub are followed to the function they reach (and
  the item it begins at), through ld.so's resolver on a lazy first call (plt.py);
- tracing that resumes elsewhere than where it stopped (a signal handler;
  a far transfer such as a syscall stops it right after itself) opens an
  asynchronous frame, whose "call site" is where the interrupted code
  resumes.  The handler's return goes to the signal trampoline, which stays
  in that frame; tracing that resumes where an asynchronous frame's
  interrupted code resumes (rt_sigreturn) closes it;
- a gap closes every frame; the items after it start a new tree.

Functions' extents come from the modules' unwind tables (FunctionRanges).
"""

from array import array

import numpy as np

from .. import progress
from ..libipt import EventType
from . import compiled_runs, regular_runs
from .block_facts import BlockFacts
from .branches import CALL, JUMP, RETURN, PartBranches

UNTRACED_START, LAZY_BINDING, TAIL_CALL, ASYNCHRONOUS, LEFT_NON_LOCALLY, SWITCHED = 1, 2, 4, 8, 16, 32
_CALL, _RETURN, _JUMP = CALL, RETURN, JUMP
SHORTEST_RUN = 32  # shorter runs cost less visited one by one than with a dozen numpy calls
SLICE = 1 << 18  # ordinals of a part's block sequence taken at once: their columns (PartBranches) stay near 4 MB
_NOT_RESOLVING, _IN_STUB, _IN_RESOLVER = 0, 1, 2
_DISABLED = (EventType.DISABLED, EventType.ASYNC_DISABLED)


class ForestArrays:
    """The nodes as built, in creation order: what CallForest sorts and keeps."""

    def __init__(self, wide):
        self.first, self.last = (array("q"), array("q")) if wide else (array("i"), array("i"))  # item indices
        self.parent, self.level = array("i"), array("i")
        self.entry = array("Q")
        self.extra = {}  # node -> the stub (PLT calls) or the resume address (ASYNC): few nodes have one
        self.entered = {}  # node -> the item where the function a PLT call reached began (after the stub)
        self.flags = array("B")
        # node -> item of its call instruction, where it is not first - 1 (tail calls; None: a switched frame)
        self.call_items = {}
        # Per tree: its first node (a tree's nodes are made before the next tree's), and the lowest level of a
        # node in it (untraced callers go below 0).
        self.tree_starts, self.tree_levels = [], []


def build(decoded, expander, functions, plt, shortest_run=SHORTEST_RUN, task=progress.QUIET, pieces=None):
    """ForestArrays of ``decoded``; ``functions`` is a FunctionRanges, ``plt`` the PltSections (or None).

    Runs of at least ``shortest_run`` regular branches are built in bulk (regular_runs.py); None visits
    every branch one by one: the reference the bulk build must match exactly.  ``task`` (a
    progress.Task) hears the items done after each slice, and may stop the build there.  ``pieces``
    (a forest_join.PieceJoins) joins the parts whose forest was built where they were decoded.
    """
    builder = Builder(decoded, expander, functions, plt, shortest_run, task)
    parts = decoded.parts
    for k, part in enumerate(parts):
        base, next_ip = decoded.part_starts[k], _first_ip(parts[k + 1]) if k + 1 < len(parts) else None
        if pieces is None or not pieces.joined(builder, k, base, next_ip):
            builder.part(part, base, next_ip)
    builder.close_all(decoded.item_count - 1)
    return builder.nodes


def _first_ip(part):
    """The address of a part's first item, or None if it starts with a gap (or is empty)."""
    if not part.block_sequence or not part.block_sizes[part.block_sequence[0]]:
        return None
    return part.block_ips[part.block_sequence[0]]


class Builder:
    def __init__(self, decoded, expander, functions, plt, shortest_run, task):
        self.expander, self.functions, self.plt, self.shortest_run = expander, functions, plt, shortest_run
        self.task = task
        self.nodes = ForestArrays(decoded.item_count >= 2**31)
        # The open frames, innermost last: node, return address, the pc of the frame below while it is
        # open (its call instruction; for an asynchronous frame, where the interrupted code resumes), PLT state.
        self.stack, self.returns, self.call_sites, self.states = [], [], [], []
        self.blocks = BlockFacts(expander, functions, plt)
        self.resumed_at = dict(decoded.events_of((EventType.ENABLED,)))
        self.stopped_at = dict(decoded.events_of(_DISABLED))
        self.events = sorted(self.resumed_at)  # the resumptions, visited in order with the branches
        self.resumed_items = np.array(self.events, dtype=np.int64)  # for the runs to find the branches near events
        self.event_items = np.array(sorted(self.resumed_at.keys() | self.stopped_at.keys()), dtype=np.int64)
        self.next_event = 0
        self.untraced_callees = set()  # items where tracing resumed at the return address of an untraced callee
        self.scratch = compiled_runs.Scratch()  # the memory of the slices' columns and of the chunks' runs

    # -- nodes -------------------------------------------------------------------------------------

    def open(self, first, entry, return_address, call_site, flags=0, extra=0, parent=None):
        nodes = self.nodes
        if parent is None:
            parent = self.stack[-1] if self.stack else -1
        node = len(nodes.first)
        if parent == -1:  # a new tree
            nodes.tree_starts.append(node)
            nodes.tree_levels.append(0)
        nodes.first.append(first)
        nodes.last.append(-1)
        nodes.parent.append(parent)
        nodes.level.append(self._level_of(parent) + 1 if parent != -1 else 0)
        nodes.entry.append(entry or 0)
        if extra:
            nodes.extra[node] = extra
        nodes.flags.append(flags)
        self.stack.append(node)
        self.returns.append(return_address)
        self.call_sites.append(call_site)
        self.states.append(_IN_STUB if self.plt is not None and entry and self.plt.contains(entry) else 0)
        return node

    def pop(self, last, flags=0):
        node = self.stack.pop()
        self.returns.pop()
        self.call_sites.pop()
        self.states.pop()
        self.nodes.last[node] = last
        self.nodes.flags[node] |= flags
        return node

    def close_all(self, last):
        while self.stack:
            self.pop(last)

    # -- the pass ----------------------------------------------------------------------------------

    def part(self, part, base, next_ip):
        """Visit one part's branches, a slice at a time; ``next_ip`` is where the next part starts."""
        if not part.block_sequence:
            return
        tail_rows, rows, start = self.blocks.tail_rows(part), None, base
        for low in range(0, len(part.block_sequence), SLICE):
            high = min(low + SLICE, len(part.block_sequence))
            branches = PartBranches(part, start, next_ip, tail_rows, low, high, self.scratch)
            self._stops_after_far_transfers(branches)
            if not low and not self.stack and not branches.gaps[0]:  # the trace (or a part after a gap) starts a tree
                self.open(base, part.block_ips[branches.sequence[0]], None, None)
            if self.shortest_run is None:
                self.visit(branches, 0, len(branches.ordinals))
            else:
                rows = rows or regular_runs.PartRows(self, branches)
                self._visit_runs(branches, rows)
            start = branches.next_base
            self.task.at(start)
        self.events_until(base + part.item_count)

    def _visit_runs(self, branches, rows):
        """Visit the irregular branches and short runs one by one; add the long runs' frames in bulk."""
        count, done = len(branches.ordinals), 0
        for low in range(0, count, regular_runs.CHUNK):
            runs = regular_runs.RegularRuns(self, branches, rows, low, min(low + regular_runs.CHUNK, count))
            for start, stop in runs.bounds:
                self.visit(branches, done, start)
                if self.stack and (self._following_stub() or stop - start < self.shortest_run):
                    self.visit(branches, start, stop)  # the innermost frame is still following a PLT stub
                elif self.stack:
                    runs.add(start, stop)
                done = stop
        self.visit(branches, done, count)

    def visit(self, branches, start, stop):
        """Visit the branches ``start``..``stop`` (numbers among the ordinals to visit), in order."""
        for ordinal in branches.ordinals[start:stop].tolist():
            self._branch(branches, ordinal)

    def _branch(self, branches, ordinal):
        sequence, ips = branches.sequence, branches.ips
        row, last = int(sequence[ordinal]), int(branches.ends[ordinal])
        following = branches.following(ordinal)
        if branches.gaps[ordinal]:
            self.events_until(last)
            self.close_all(last - 1)
            if following:
                self.open(last + 1, ips[sequence[ordinal + 1]], None, None)
            return
        first = last - int(branches.sizes[ordinal]) + 1
        self.events_until(first)
        part = branches.part
        if row in branches.tail_rows:
            for offset, target in self.blocks.of(row, part)[2]:
                self.tail_call(first + offset, target)
        at_end = ordinal + 1 == branches.count
        target = ips[sequence[ordinal + 1]] if following else (branches.next_ip if at_end else None)
        if last + 1 in self.stopped_at:
            target = None  # tracing stopped right after the branch: where it went is unknown
        iclass = int(branches.classes[ordinal])
        if iclass == _CALL:
            self.call(row, part, last, target)
        elif iclass == _RETURN:
            self.ret(last, target, row, part)
        elif iclass == _JUMP:
            self.jump(row, part, last, target)

    def _stops_after_far_transfers(self, branches):
        """Where tracing stopped for a disable with no address (a syscall): right after the instruction before it."""
        base, ends = branches.base, branches.ends
        for index in [i for i, ip in self.stopped_at.items() if ip is None and base < i <= branches.next_base]:
            ordinal = int(np.searchsorted(ends, index - 1))
            if ordinal < len(ends) and ends[ordinal] == index - 1 and not branches.gaps[ordinal]:
                address, size, _ = self.blocks.of(int(branches.sequence[ordinal]), branches.part)
                self.stopped_at[index] = address + size

    def events_until(self, item):
        """Handle the resumptions of tracing before item ``item`` and earlier."""
        events = self.events
        while self.next_event < len(events) and events[self.next_event] <= item:
            index = events[self.next_event]
            self.next_event += 1
            self.resumed(index, self.resumed_at[index], self.stopped_at.get(index))

    def call(self, row, part, item, target):
        call_site, size, _ = self.blocks.of(row, part)
        return_address = call_site + size
        if self.resumed_at.get(item + 1) == return_address and item + 1 in self.stopped_at:
            self.untraced_callees.add(item + 1)  # tracing stopped at the callee and resumed at the return
            return
        if self.stack:
            self.open(item + 1, target, return_address, call_site)

    def ret(self, item, target, row, part):
        if not self.stack:
            return
        if len(self.stack) == 1:  # out of the tree's first frame: it was called before the trace began
            self._untraced_caller(item, target)
            return
        if target is not None and target == self.returns[-1]:
            self.pop(item)
            return
        flags = self.nodes.flags[self.stack[-1]]
        if target is None:
            self.pop(item, LEFT_NON_LOCALLY)
        elif flags & ASYNCHRONOUS:  # a signal handler returns into the signal trampoline, still in its frame
            resume = self.returns[-1]
            self.pop(item)
            self.open(item + 1, target, resume, resume, ASYNCHRONOUS, extra=resume)
        elif not self._land(target, item, self.call_sites[-1]):
            self._switch(flags, item, target, self.blocks.of(row, part)[0])

    def _switch(self, flags, item, target, switch_address):
        """A return to no open function: the thread switched context (swapcontext) and runs another stack.

        The frame that switched stays open (suspended until a switch back lands in it or further
        out); a switched frame's own return goes to its unknown caller, which opens the next one."""
        call_site = self.call_sites[-1]
        if flags & SWITCHED:
            self.pop(item)
        else:
            call_site = switch_address  # where the suspended frame stands
        switched = self.open(item + 1, target, None, call_site, SWITCHED)
        self.nodes.call_items[switched] = None

    def jump(self, row, part, item, target):
        if target is None or not self.stack:
            return
        if self._following_stub():
            self._resolve_stub(row, part, item, target)
            return
        jump_address = self.blocks.of(row, part)[0]
        if self.blocks.into_stub(jump_address, target):
            self.tail_call(item, target)  # through another PLT stub: followed to its function from there
            return
        here, there = self.functions.containing(jump_address), self.functions.containing(target)
        if there is None or here == there:
            return
        if not self._land(target, item, self.call_sites[-1]) and there[0] == target:
            self.tail_call(item, target)

    def tail_call(self, item, target):
        """The frame's function jumped to ``target``, another function's entry: that function replaces the frame."""
        nodes = self.nodes
        node = self.stack[-1] if self.stack else -1
        if node == -1 or nodes.parent[node] == -1:
            return  # the tree's first frame: its caller is unknown anyway
        call_item = nodes.call_items.get(node, nodes.first[node] - 1)
        return_address, call_site = self.returns[-1], self.call_sites[-1]
        self.pop(item)
        replacement = self.open(item + 1, target, return_address, call_site, TAIL_CALL, parent=nodes.parent[node])
        nodes.call_items[replacement] = call_item

    def resumed(self, item, resumed_ip, stopped_ip):
        """Tracing resumed before ``item`` at ``resumed_ip``, after stopping at ``stopped_ip`` (None: unknown)."""
        if not self.stack or stopped_ip is None or resumed_ip is None or resumed_ip == stopped_ip:
            return
        if item in self.untraced_callees:
            return
        depth = self._signal_frame(resumed_ip)
        if depth is not None:
            while len(self.stack) > depth:  # rt_sigreturn: back to the interrupted code
                self.pop(item - 1)
            return
        self.open(item, resumed_ip, stopped_ip, stopped_ip, ASYNCHRONOUS, extra=stopped_ip)

    # -- what the open frames are (piece_forest.py answers for frames opened before a piece) ------------

    def _level_of(self, node):
        return self.nodes.level[node]

    def _following_stub(self):
        """Is the innermost frame still following a PLT stub (to its function, or through ld.so's resolver)?"""
        return self.states[-1]

    def _signal_frame(self, resumed_ip):
        """The depth of the innermost signal handler's frame whose interrupted code resumes at ``resumed_ip``."""
        for depth in range(len(self.stack) - 1, -1, -1):
            if self._is_signal_frame(depth, resumed_ip):
                return depth
        return None

    def _is_signal_frame(self, depth, resumed_ip):
        return self.nodes.flags[self.stack[depth]] & ASYNCHRONOUS and self.returns[depth] == resumed_ip

    def _unknown(self, pc):
        """Is ``pc`` (a frame's, in _land) one nobody knows?  Never here: every frame was opened in the trace."""
        return False

    def _found_below(self, pc, function):
        """Is ``function`` open below the frame whose pc is ``pc``, where the open frames end here?  No."""
        return False

    # -- helpers -----------------------------------------------------------------------------------

    def _untraced_caller(self, item, target):
        nodes = self.nodes
        node = self.pop(item)
        tree = len(nodes.tree_levels) - 1  # the open frames are the newest tree's
        level = nodes.level[node] - 1
        caller = len(nodes.first)
        nodes.first.append(nodes.first[node])
        nodes.last.append(-1)
        nodes.parent.append(-1)
        nodes.level.append(level)
        nodes.entry.append(target or 0)  # named by where the return went
        nodes.flags.append(UNTRACED_START)
        nodes.parent[node] = caller
        nodes.tree_levels[tree] = min(nodes.tree_levels[tree], level)
        self.stack.append(caller)
        self.returns.append(None)
        self.call_sites.append(None)
        self.states.append(0)

    def _land(self, target, item, innermost_pc):
        """Control reached ``target`` outside the innermost frame's code: close the frames above the one it is in.

        A frame's pc is the call site of the frame above it (``innermost_pc`` for the innermost).
        True if ``target`` lies in an open frame's function; the frames above that one are closed.
        """
        function = self.functions.containing(target)
        if function is None:
            return False
        pc = innermost_pc
        for depth in range(len(self.stack) - 2, -1, -1):
            if self._unknown(pc):
                break
            if pc is not None and self.functions.containing(pc) == function:
                while len(self.stack) > depth + 1:
                    returned = len(self.stack) == depth + 2 and self.returns[-1] == target
                    self.pop(item, 0 if returned else LEFT_NON_LOCALLY)
                return True
            pc = self.call_sites[depth]
        return self._found_below(pc, function)

    def _resolve_stub(self, row, part, item, target):
        """Follow a PLT call's jump at ``item``: on to PLT0 and the resolver, or into the function it reaches."""
        node = self.stack[-1]
        nodes, plt = self.nodes, self.plt
        if self.states[-1] == _IN_STUB:
            if plt.contains(target):
                return  # on to PLT0, for a first, lazy call
            if plt.in_plt0(self.blocks.of(row, part)[0]):
                self.states[-1] = _IN_RESOLVER  # PLT0 jumped into ld.so's resolver
                nodes.flags[node] |= LAZY_BINDING
                return
        nodes.extra[node] = nodes.entry[node]  # the stub
        nodes.entry[node] = target
        nodes.entered[node] = item + 1
        self.states[-1] = _NOT_RESOLVING
