"""A piece's call forest, built in the process that decoded the piece, for forest_join.py to join.

A piece of a trace cut at PSBs (parallel.py) begins inside frames that only
the pieces before it know.  Its builder stands them in as outer frames: node
ids -2, -3, ... (the innermost first; -1 stays "no parent"), whose return
addresses, call sites and states are unknown (Outer values).  Wherever the
build depends on one, it takes the answer that nearly always holds and
writes that assumption down (an outer frame never changes while the piece
runs, so when it was made does not matter):

- ``("inner", j)``: outer frame j is not the outermost (a return out of it,
  or a tail call from it, is not one out of an untraced caller);
- ``("return", j, target)``: outer frame j returns to ``target``;
- ``("state", j)``: outer frame j is not following a PLT stub;
- ``("land", j, function)``: no frame from outer frame j outwards stands in
  ``function`` (the target of a jump or return that left its function);
- ``("signal", j, ip)``: no frame from outer frame j outwards is a signal
  handler's whose interrupted code resumes at ``ip``;

and notes what it did to them: which it closed, where and how (``outer_pops``),
and where a gap closed them all (``closed_at``).  Joining checks the assumptions against the open
frames the pieces before left; where one fails, the piece is built again
with those frames, so the forest is always the single pass's.
"""

from array import array

from .. import progress
from .forest_builder import LEFT_NON_LOCALLY, SHORTEST_RUN, TAIL_CALL, Builder

COLUMNS = ("first", "last", "parent", "level", "entry", "flags")


class Outer:
    """The unknown return address or call site of outer frame ``frame`` (or of a tail call that replaced it)."""

    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


def outer_node(frame):
    """The node id that stands for outer frame ``frame``."""
    return -2 - frame


def outer_frame(node):
    """The outer frame a node id stands for, or None for a node of the piece (or -1)."""
    return -2 - node if node <= -2 else None


class PieceForest:
    """What a piece's build leaves for the join: its nodes (items from 0 at the piece's start), what it
    assumed of the outer frames and did to them, and its open frames at the end.

    Every field is an array or plain JSON data, so that a child process sends it as it sends its part.
    ``outer`` is False for a piece built with no frames open before it (the trace's first).
    """

    def __init__(self, nodes, builder, outer, next_ip):
        for name in COLUMNS:
            setattr(self, name, getattr(nodes, name))
        # The sparse facts as columns of (node, value) pairs (a million PLT or tail calls is no rarity); the call
        # items of switched frames (None) and of tail calls out of outer frames (Outer), as JSON.
        self.extra = _pairs(nodes.extra, "Q")
        self.entered = _pairs(nodes.entered, "q")
        self.call_items = _pairs({node: item for node, item in nodes.call_items.items() if isinstance(item, int)}, "q")
        self.odd_call_items = [
            [node, _encoded(item)] for node, item in nodes.call_items.items() if not isinstance(item, int)
        ]
        self.tree_starts, self.tree_levels = list(nodes.tree_starts), list(nodes.tree_levels)
        self.assumed = list(builder.assumed)
        self.outer_pops, self.closed_at = builder.outer_pops, builder.closed_at
        self.outer, self.next_ip = outer, next_ip
        self.stack = list(builder.stack)  # node ids: an outer frame's is negative
        self.returns = [_encoded(value) for value in builder.returns]
        self.call_sites = [_encoded(value) for value in builder.call_sites]
        self.states = [0 if isinstance(state, Outer) else state for state in builder.states]
        self.untraced_callees = sorted(builder.untraced_callees)


def _pairs(mapping, typecode):
    """``mapping`` as one array: its keys (node ids), then its values, each as a 64-bit ``typecode``."""
    found = array(typecode, mapping)
    found.extend(array(typecode, mapping.values()))
    return found


def _encoded(value):
    """An Outer value as ``["outer", j]``; anything else as it is (an address, an item, or None)."""
    return ["outer", value.frame] if isinstance(value, Outer) else value


def build_piece(part, next_ip, expander, forest, outer=True, task=progress.QUIET):
    """The PieceForest of one decoded part, whose last branch went to ``next_ip`` (None: unknown).

    ``forest`` (a parallel.ForestMaker) has the modules' functions and PLTs; ``outer`` says frames may
    be open before the part (any piece but the trace's first); ``task`` hears the items done.
    """
    builder = _PieceBuilder(_OnePart(part), expander, forest.functions, forest.plt, outer, task)
    builder.part(part, 0, next_ip)
    return PieceForest(builder.nodes, builder, outer, next_ip)


class _OnePart:
    """A part seen as a whole decoded thread, as the builder reads one: item indices from the part's start."""

    def __init__(self, part):
        self.parts, self.part_starts = [part], [0]
        self.events_of, self.item_count = part.events_of, part.item_count


class _PieceBuilder(Builder):
    """forest_builder's builder over frames it does not know, writing down what it assumes of them."""

    def __init__(self, decoded, expander, functions, plt, outer, task):
        super().__init__(decoded, expander, functions, plt, SHORTEST_RUN, task)
        self.assumed = set()  # what holds of the outer frames whenever it is checked: their order does not matter
        self.outer_pops, self.closed_at = [], None  # (frame, item, flags) in order; the gap that closed them all
        if outer:
            self.nodes.tree_starts.append(0)  # tree 0: the one the pieces before left open
            self.nodes.tree_levels.append(0)
            self._push_outer(0)

    def _push_outer(self, frame):
        self.stack.append(outer_node(frame))
        self.returns.append(Outer(frame))
        self.call_sites.append(Outer(frame))
        self.states.append(Outer(frame))

    def _level_of(self, node):
        frame = outer_frame(node)
        return -frame if frame is not None else self.nodes.level[node]

    def _following_stub(self):
        state = self.states[-1]
        if isinstance(state, Outer):
            self.assumed.add(("state", state.frame))
            return 0
        return state

    def pop(self, last, flags=0):
        frame = outer_frame(self.stack[-1])
        if frame is None:
            return super().pop(last, flags)
        for column in (self.stack, self.returns, self.call_sites, self.states):
            column.pop()
        self.outer_pops.append((frame, last, flags))
        self._push_outer(frame + 1)  # the frame below it, as unknown
        return outer_node(frame)

    def close_all(self, last):
        while self.stack and outer_frame(self.stack[-1]) is None:
            super().pop(last)
        if self.stack:
            self.closed_at = last
            for column in (self.stack, self.returns, self.call_sites, self.states):
                column.clear()

    def ret(self, item, target, row, part):
        returns = self.returns[-1] if self.stack else None
        if not isinstance(returns, Outer):
            super().ret(item, target, row, part)
            return
        if outer_frame(self.stack[-1]) is not None:
            self.assumed.add(("inner", returns.frame))  # a return out of it is no untraced caller's
        if target is None:
            self.pop(item, LEFT_NON_LOCALLY)
            return
        self.assumed.add(("return", returns.frame, target))
        self.pop(item)

    def tail_call(self, item, target):
        frame = outer_frame(self.stack[-1]) if self.stack else None
        if frame is None:
            super().tail_call(item, target)
            return
        self.assumed.add(("inner", frame))  # the outermost frame's caller would be unknown: no tail call
        self.pop(item)  # the frame below it is now the innermost: the replacement's parent
        replacement = self.open(item + 1, target, Outer(frame), Outer(frame), TAIL_CALL, parent=outer_node(frame + 1))
        self.nodes.call_items[replacement] = Outer(frame)

    def _unknown(self, pc):
        return isinstance(pc, Outer)

    def _found_below(self, pc, function):
        if isinstance(pc, Outer):  # the frames from the one below pc's frame outwards are unknown
            self.assumed.add(("land", pc.frame + 1, function))
        return False

    def _signal_frame(self, resumed_ip):
        for depth in range(len(self.stack) - 1, -1, -1):
            frame = outer_frame(self.stack[depth])
            if frame is not None:
                self.assumed.add(("signal", frame, resumed_ip))
                return None
            if self._is_signal_frame(depth, resumed_ip):
                return depth
        return None
