"""The call forest of a decoded thread: who called whom, over which items.

Built from the calls and returns the decoder already noted (every call ends a
libipt block, so no instruction needs expanding), plus the gaps:

- a call opens a child that starts at the next item;
- a return closes the current call; returning from the outermost call means
  it was called before the trace began, so a new root, an "untraced" caller,
  is put above it (its first index is the item after the return);
- a gap ends every open call, and the items after it start a new tree.
"""

from dataclasses import dataclass, field

from ..libipt import InsnClass


@dataclass(eq=False)
class Call:
    """One function invocation: items ``first``..``last`` including its callees."""

    first: int
    last: int = -1
    parent: "Call | None" = None
    children: list["Call"] = field(default_factory=list)
    untraced_start: bool = False  # a caller the trace returned into: it was entered before the trace began
    address: int | None = None  # of its first traced instruction (filled by CallForest)

    @property
    def depth(self):
        depth, node = 0, self.parent
        while node is not None:
            depth, node = depth + 1, node.parent
        return depth

    def walk(self):
        """This call and every call below it, in order of their first index."""
        yield self
        for child in self.children:
            yield from child.walk()


class CallForest:
    """The trees of a thread's calls, one per stretch between gaps."""

    def __init__(self, decoded, address_of):
        self.trees = _build(decoded)
        for call in self.calls():
            call.address = address_of(call.first)

    def calls(self):
        """Every call, ordered by first index."""
        return sorted((call for tree in self.trees for call in tree.walk()), key=lambda c: (c.first, c.depth))

    def __len__(self):
        return sum(1 for tree in self.trees for _ in tree.walk())


def _build(decoded):
    total = decoded.item_count
    if not total:
        return []
    gaps = [gap.index for gap in decoded.gaps]
    gap_set = set(gaps)
    flows = list(decoded.call_items())
    trees, current = [], None

    def open_tree(first):
        nonlocal current
        current = Call(first)
        trees.append(current)

    def close_all(last):
        node = current
        while node is not None:
            node.last = last
            node = node.parent

    marks = sorted([(g, 0, None) for g in gaps] + [(i, 1, c) for i, c in flows])
    if not gaps or gaps[0] != 0:
        open_tree(0)
    for index, is_flow, iclass in marks:
        if not is_flow:  # a gap
            if current is not None:
                close_all(index - 1)
                current = None
            if index + 1 < total and index + 1 not in gap_set:
                open_tree(index + 1)
            continue
        if current is None or index + 1 >= total:
            continue
        if iclass == InsnClass.CALL:
            child = Call(index + 1, parent=current)
            current.children.append(child)
            current = child
        elif iclass == InsnClass.RETURN:
            current.last = index
            if current.parent is None:  # returning into a caller the trace never saw call
                caller = Call(current.first, untraced_start=True)
                caller.children.append(current)
                current.parent = caller
                trees[trees.index(current)] = caller
            current = current.parent
    if current is not None:
        close_all(total - 1)
    return trees
