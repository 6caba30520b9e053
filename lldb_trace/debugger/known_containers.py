"""Whether LLDB's view of a node-based container is what memory held at the position.

LLDB's formatters for libstdc++'s std::map, std::set (and their multi forms)
and std::list walk the nodes' links, and where a link cannot be read they go
on with what they got: at a past position a map of three showed its first
element three times, a list of three ``size=0 {}``.  Such a view is proven
where every link its walk follows is known (the elements are values of their
own, each shown as known or not); elsewhere the views show where the first
link not known lies instead.
"""

import lldb

from .histories import shows_history
from .shown_state import known_memory

_TREES = ("std::map<", "std::set<", "std::multimap<", "std::multiset<")
_LISTS = ("std::__cxx11::list<", "std::list<")
_MOST_NODES = 1 << 20  # a walk longer than this is no container's the formatters would show whole
_PARENT, _LEFT, _RIGHT = 8, 16, 24  # _Rb_tree_node_base: its color, then the links (x86-64)


def is_node_container(sbtype):
    name = sbtype.GetCanonicalType().GetUnqualifiedType().GetName() or ""
    return name.startswith(_TREES + _LISTS)


def unproven_container(target, value):
    """The address of the first link not known that LLDB's walk of the container ``value`` follows, or None where
    every one is known (or it is no container of those, or no loaded trace's)."""
    name = value.GetType().GetCanonicalType().GetUnqualifiedType().GetName() or ""
    if not name.startswith(_TREES + _LISTS) or not shows_history(target):
        return None
    raw = value.GetNonSyntheticValue()
    walk = _tree_walk if name.startswith(_TREES) else _list_walk
    try:
        walk(target, raw)
    except _UnknownLinkError as unknown:
        return unknown.address
    except _LayoutError:
        return None  # another library's layout: its view is LLDB's business
    return None


class _UnknownLinkError(Exception):
    def __init__(self, address):
        super().__init__(address)
        self.address = address


class _LayoutError(Exception):
    """The value does not have the members the walk reads."""


def _member(value, *names):
    for name in names:
        value = value.GetChildMemberWithName(name)
        if not value.IsValid():
            raise _LayoutError(name)
    address = value.GetLoadAddress()
    if address == lldb.LLDB_INVALID_ADDRESS:
        raise _LayoutError(names[-1])
    return address


def _word(target, address):
    data = known_memory(target, address, 8)
    if len(data) < 8:
        raise _UnknownLinkError(address + len(data))
    return int.from_bytes(data, "little")


def _tree_walk(target, raw):
    """libstdc++'s red-black tree from its leftmost node, in order, as many nodes as its count (_Rb_tree_increment)."""
    header = _member(raw, "_M_t", "_M_impl", "_M_header")
    count = _word(target, _member(raw, "_M_t", "_M_impl", "_M_node_count"))
    node = _word(target, header + _LEFT)
    for _ in range(min(count, _MOST_NODES)):
        if node in (header, 0):
            return  # fewer nodes than the count (or garbage, before the map is made): LLDB stops there too
        if (successor := _word(target, node + _RIGHT)) != 0:
            node = successor
            while (further := _word(target, node + _LEFT)) != 0:
                node = further
            continue
        above = _word(target, node + _PARENT)
        while node == _word(target, above + _RIGHT):
            node, above = above, _word(target, above + _PARENT)
        if _word(target, node + _RIGHT) != above:
            node = above


def _list_walk(target, raw):
    """libstdc++'s list from its header along each node's next link (its first word), back to the header."""
    header = _member(raw, "_M_impl", "_M_node")
    node = _word(target, header)
    for _ in range(_MOST_NODES):
        if node in (header, 0):  # round, or a null link (garbage, before the list is made): the walk ends
            return
        node = _word(target, node)
