"""The call forest of a decoded thread: who called whom, over which items.

Built from the calls and returns the decoder already noted (every call ends a
libipt block, so no instruction needs expanding), plus the gaps:

- a call opens a child that starts at the next item;
- a return closes the current call; returning from the outermost call means
  it was called before the trace began, so a new root, an "untraced" caller,
  is put above it, named by the instruction the return went to;
- a gap ends every open call, and the items after it start a new tree;
- a call after which tracing stops and resumes at its return address ran
  untraced (the live recorder's vdso, code outside a PT address filter): it
  opens no child.

A call is named by the function that ran: one that starts in a PLT stub is
followed through the stub (and, on a lazily bound first call, through ld.so's
resolver) to the library function it reached (see plt.py).
"""

from dataclasses import dataclass, field

from ..libipt import EventType, InsnClass
from .cursor import entry_positions, runs
from .plt import reached_function


@dataclass(eq=False, repr=False, slots=True)
class Call:
    """One function invocation: items ``first``..``last`` including its callees.

    ``address`` is the entry of the function that ran (for an untraced
    caller: the instruction the trace returned to), ``stub`` the PLT stub the
    call went through (None for a direct call) and ``lazy_binding`` whether
    ld.so's resolver bound the stub on this call.
    """

    first: int
    last: int = -1
    parent: "Call | None" = None
    children: list["Call"] = field(default_factory=list)
    untraced_start: bool = False  # a caller the trace returned into: it was entered before the trace began
    address: int | None = None
    stub: int | None = None
    lazy_binding: bool = False
    depth: int = 0

    def walk(self):
        """This call and every call below it, parents before children, in order of their first index."""
        stack = [self]
        while stack:
            call = stack.pop()
            yield call
            stack.extend(reversed(call.children))

    def __repr__(self):
        where = f" at 0x{self.address:x}" if self.address is not None else ""
        via = f" via stub 0x{self.stub:x}" + (" (bound lazily)" if self.lazy_binding else "") if self.stub else ""
        untraced = " (untraced start)" if self.untraced_start else ""
        callees = f"{len(self.children)} callee" + ("" if len(self.children) == 1 else "s")
        return f"<Call [{self.first}..{self.last}] depth {self.depth}{where}{via}{untraced}, {callees}>"


class CallForest:
    """The trees of a thread's calls, one per stretch between gaps."""

    def __init__(self, decoded, expander, plt=None):
        self.trees, resumed = _build(decoded, _untraced_callees(decoded, expander))
        self._ordered = tuple(call for tree in self.trees for call in tree.walk())
        firsts = (call.first for call in self._ordered)  # sorted: the order is by first index
        plt = plt if plt else None
        for call, at in zip(self._ordered, entry_positions(decoded, firsts), strict=True):
            call.depth = 0 if call.parent is None else call.parent.depth + 1  # parents come first
            call.address = _address(decoded, call.first, at, expander)
            if plt is not None and call.address is not None and not call.untraced_start and plt.contains(call.address):
                reached = reached_function(call, decoded, expander, plt, at)
                if reached is not None:
                    call.stub, call.address = call.address, reached[0]
                    call.lazy_binding = reached[1]
        for caller, index in resumed:
            caller.address = _address_of(decoded, index, expander)

    def calls(self):
        """Every call in execution order (by first index, parents before children), as a tuple."""
        return self._ordered

    def __len__(self):
        return len(self._ordered)


def _address(decoded, index, at, expander):
    """The address of item ``index`` (None for a gap), given the entry ``at`` that holds it."""
    k, position, first = at
    part = decoded.parts[k]
    entry = part.entries[position]
    size = part.block_sizes[entry]
    if not size:
        return None
    offset = index - decoded.part_starts[k] - first
    return part.block_ips[entry] if not offset else expander.addresses(part.block_ips[entry], size)[offset]


def _address_of(decoded, index, expander):
    """The address of item ``index``; None for a gap or past the end."""
    for _, addresses in runs(decoded, index, expander):
        return addresses[0] if isinstance(addresses, tuple) else None
    return None


def _untraced_callees(decoded, expander):
    """Items of calls whose callee ran untraced: tracing resumes at the call's return address right after it."""
    resumed_at = {
        event.index: event.ip for event in decoded.events if event.type == EventType.ENABLED and event.ip is not None
    }
    found = set()
    for index in resumed_at:
        address = _address_of(decoded, index - 1, expander) if index else None
        if address is not None and expander.classifier[address].next_address == resumed_at[index]:
            found.add(index - 1)
    return found


def _build(decoded, untraced_callees):
    """The trees, and ``(untraced caller, index of the first item it ran)`` for every untraced caller."""
    total = decoded.item_count
    if not total:
        return [], []
    gaps = [gap.index for gap in decoded.gaps]
    gap_set = set(gaps)
    calls_and_returns = list(decoded.call_items())
    trees, resumed, current = [], [], None

    def open_tree(first):
        nonlocal current
        current = Call(first)
        trees.append(current)

    def close_all(last):
        node = current
        while node is not None:
            node.last = last
            node = node.parent

    marks = sorted([(g, 0, None) for g in gaps] + [(i, 1, c) for i, c in calls_and_returns])
    if not gaps or gaps[0] != 0:
        open_tree(0)
    for index, is_call_or_return, iclass in marks:
        if not is_call_or_return:  # a gap
            if current is not None:
                close_all(index - 1)
                current = None
            if index + 1 < total and index + 1 not in gap_set:
                open_tree(index + 1)
            continue
        if current is None or index + 1 >= total:
            continue
        if iclass == InsnClass.CALL and index not in untraced_callees:
            child = Call(index + 1, parent=current)
            current.children.append(child)
            current = child
        elif iclass == InsnClass.RETURN:
            current.last = index
            if current.parent is None:  # returning into a caller the trace never saw call
                caller = Call(current.first, untraced_start=True)
                caller.children.append(current)
                current.parent = caller
                trees[-1] = caller
                resumed.append((caller, index + 1))
            current = current.parent
    if current is not None:
        close_all(total - 1)
    return trees, resumed
