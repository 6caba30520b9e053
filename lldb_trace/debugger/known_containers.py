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
from .known_strings import class_name, referent
from .shown_state import known_memory

_TREES = ("std::map<", "std::set<", "std::multimap<", "std::multiset<")
_LISTS = ("std::__cxx11::list<", "std::list<")
_FORWARD = ("std::forward_list<",)
_SHARED = ("std::shared_ptr<", "std::weak_ptr<")
_HASHED = ("std::unordered_map<", "std::unordered_set<", "std::unordered_multimap<", "std::unordered_multiset<")
# the library types whose view LLDB's formatters compute from their fields: those must be known
_FORMATTED = (*_TREES, *_LISTS, *_FORWARD, *_HASHED, "std::vector<", "std::deque<", "std::optional<",
              "std::variant<", "std::shared_ptr<", "std::weak_ptr<", "std::unique_ptr<")  # fmt: skip
_MOST_NODES = 1 << 20  # a walk longer than this is no container's the formatters would show whole
_MOST_FIELDS = 64  # fields of a container object looked at (a vector has 3, a hash table 8)
_PARENT, _LEFT, _RIGHT = 8, 16, 24  # _Rb_tree_node_base: its color, then the links (x86-64)


def is_node_container(sbtype):
    """Is ``sbtype`` a library container or wrapper whose view LLDB's formatters compute (see _FORMATTED)?"""
    return class_name(sbtype).startswith(_FORMATTED)


def unproven_container(target, value):
    """The address of the first byte not known that LLDB's view of the container ``value`` is computed from (its
    own fields, the links its walk follows), or None where every one is known (or it is no container of those,
    or no loaded trace's)."""
    name = class_name(value.GetType())
    if not name.startswith(_FORMATTED) or not shows_history(target):
        return None
    raw = referent(value).GetNonSyntheticValue()
    walks = {_TREES: _tree_walk, _LISTS: _list_walk, _FORWARD: _forward_walk, _HASHED: _hashed_walk, _SHARED: _counts}
    try:
        _fields(target, raw)
        for prefixes, walk in walks.items():
            if name.startswith(prefixes):
                walk(target, raw)
    except _UnknownLinkError as unknown:
        return unknown.address
    except _LayoutError:
        return None  # another library's layout (or a copy in the debugger): its view is LLDB's business
    return None


def _fields(target, raw):
    """Each number and pointer the container object holds (padding and a wrapped value's own bytes aside) known."""
    pending, seen = [raw], 0
    while pending and seen < _MOST_FIELDS:
        value = pending.pop()
        sbtype = value.GetType().GetCanonicalType()
        if sbtype.GetTypeClass() in (lldb.eTypeClassBuiltin, lldb.eTypeClassPointer, lldb.eTypeClassEnumeration):
            seen += 1
            address, size = value.GetLoadAddress(), value.GetByteSize()
            if address == lldb.LLDB_INVALID_ADDRESS or value.GetError().Fail():  # LLDB could not read the object
                address, size = raw.GetLoadAddress(), raw.GetByteSize()  # whole: where it stops being known
                if address == lldb.LLDB_INVALID_ADDRESS:
                    raise _LayoutError(value.GetName())
            known = len(known_memory(target, address, size))
            if known < size:
                raise _UnknownLinkError(address + known)
        elif not sbtype.IsArrayType():  # an array's elements (an optional's payload bytes) are values of their own
            pending.extend(value.GetChildAtIndex(k) for k in reversed(range(value.GetNumChildren())))


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


def _forward_walk(target, raw):
    """libstdc++'s forward_list from its head along each node's next link (its first word), to a null one."""
    node = _word(target, _member(raw, "_M_impl", "_M_head"))
    for _ in range(_MOST_NODES):
        if node == 0:
            return
        node = _word(target, node)


def _hashed_walk(target, raw):
    """libstdc++'s hash table's nodes, from its before-begin node along each next link, as many as its count."""
    node = _word(target, _member(raw, "_M_h", "_M_before_begin"))
    for _ in range(min(_word(target, _member(raw, "_M_h", "_M_element_count")), _MOST_NODES)):
        if node == 0:
            return
        node = _word(target, node)


def _counts(target, raw):
    """A shared or weak pointer's control block: its use and weak counts (after the block's vtable pointer)."""
    block = _word(target, _member(raw, "_M_refcount", "_M_pi"))
    if block:
        _word(target, block + 8)
