"""``frame variable``, ``target variable`` and ``p`` on a loaded trace: a string or container over memory not known
says so.

LLDB shows a char array, char pointer or std::string as the string it could
read: over bytes the trace does not determine, ``""`` or cut short
(debugger/known_strings.py); a std::map or std::list walked over links not
known shows what its formatter guessed (debugger/known_containers.py).  The
values the command shows (``p``'s result) are walked in the order LLDB prints
them (aggregates opened, pointers followed as deep as ``--ptr-depth`` says),
and each one not proven has its summary (and a container's elements) replaced
by where the first unknown byte lies; one the walk cannot place in the output
(a formatter's own layout, say) is named in a note line.
"""

import re
import shlex
from itertools import pairwise
from typing import NamedTuple

import lldb

from ..debugger.known_containers import is_node_container, unproven_container
from ..debugger.known_strings import is_std_string, setting_number, string_element, unproven_string, unproven_text

_DEPTH = 32  # how deep the walk opens aggregates (LLDB's own limit is far deeper; real structs are not)
_OPTION_VALUES = {"-f", "--format", "-D", "--depth", "-P", "--ptr-depth", "-Z",
                  "--element-count", "-y", "--summary", "-z", "--summary-string", "-d", "--dynamic-type",
                  "-S", "--synthetic-type", "-V", "--validate"}  # fmt: skip


def mark_unproven(target, roots, output, pointers=0, flat=False):
    """``output`` of a command showing the values ``roots`` (and their children, and what they point to
    ``pointers`` deep; ``flat``: ``--flat``'s output, each field apart) with each string summary and library
    container that the position does not prove replaced (a container's elements with it), or a note naming it.
    Every one is looked for in turn, proven or not, each after the one before: one of the same name and text
    earlier in the output is its own, not a later one's."""
    notes, at = [], 0
    for value, address in _walk(target, roots, _Walk(pointers, _children_shown(target), flat)):
        summary = value.GetSummary()
        if not summary:
            continue
        name = re.escape(value.GetName() or "")
        # ``name = 0x... "text"`` inside a value, ``(type) name = "text"`` or ``(char *) 0x... "text"`` (p's)
        shown = rf"(?:(?<![\w\]]){name} = |\) (?:\$\d+ = )?)(?:0x[0-9a-fA-F]+ )?{re.escape(summary)}"  # $1: a result's
        match = re.compile(shown).search(output, at)
        if match is None:  # a formatter's own layout: named in a note, where the command showed the value at all
            if address is not None and re.search(rf"(?<![\w\]]){name} = ", output):
                notes.append(f"note: {value.GetName()} is {unproven_text(target, address)[1:-1]}")
            continue
        at = match.end()
        if address is not None:  # the summary, and a container's elements after it, go; a pointer before it stays
            start, end, unknown = (
                match.end() - len(summary),
                _block_end(output, match.end()),
                unproven_text(target, address),
            )
            output = output[:start] + unknown + output[end:]
            at = start + len(unknown)
    return output + "".join(f"{note}\n" for note in notes)


def _block_end(output, at):
    """Where a value shown from ``at`` ends: past the braces of its elements (`` {...}``, quoted text skipped)."""
    if not output.startswith(" {", at):
        return at
    depth, quoted, k = 0, False, at + 1
    while k < len(output):
        character = output[k]
        if quoted and character == "\\":
            k += 1
        elif character == '"':
            quoted = not quoted
        elif not quoted and character == "{":
            depth += 1
        elif not quoted and character == "}":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return at  # no closing brace: the summary alone


def shown_variables(target, argv):
    """The values ``frame variable`` or ``target variable`` (``argv``: the command's words) shows: its variable
    paths, or every local and argument (for ``target variable``: the globals)."""
    words = _paths(argv[2:])
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    if argv[0] == "target" and words:
        return [target.FindFirstGlobalVariable(name) for name in words]
    if not frame.IsValid():
        return []
    if argv[0] == "target":  # the globals of the frame's compile unit (statics of functions are looked for too)
        return list(frame.GetVariables(False, False, True, False))
    if not words:
        return list(frame.GetVariables(True, True, False, True))
    if "-r" in argv or "--regex" in argv:  # the operands are patterns of variable names
        variables = list(frame.GetVariables(True, True, True, True))
        return [value for value in variables if any(re.search(word, value.GetName() or "") for word in words)]
    return [frame.GetValueForVariablePath(path) for path in words]


def _paths(arguments):
    """The command's operands, past its options."""
    try:
        words = shlex.split(" ".join(arguments))
    except ValueError:
        return []
    operands, k = [], 0
    while k < len(words):
        if words[k] == "--":
            return operands + words[k + 1 :]
        if words[k].startswith("-") and len(words[k]) > 1:
            k += 2 if words[k] in _OPTION_VALUES else 1
            continue
        operands.append(words[k])
        k += 1
    return operands


def pointer_depth(argv):
    """How many pointers ``frame variable`` follows (``-P N``, ``--ptr-depth N``; 0 by default)."""
    for option, following in pairwise(argv):
        if option in ("-P", "--ptr-depth") and following.isdigit():
            return int(following)
    return 0


class _Walk(NamedTuple):
    """How LLDB prints: ``pointers`` deep it shows what pointers point to, ``children`` of each value (the target's
    max-children-count), and with ``flat`` every field apart (a std::string's too)."""

    pointers: int
    children: int
    flat: bool


def _walk(target, values, how, depth=0):
    """``(value, first unknown address or None)`` of each string and library container among the values and
    their children, depth first, in the order LLDB prints them; a container not proven is not opened (its
    elements are a formatter's guesses)."""
    for value in values:
        if value is None or not value.IsValid():
            continue
        sbtype = value.GetType()
        if string_element(sbtype) is not None or (is_std_string(sbtype) and not how.flat):
            yield value, unproven_string(target, value)
            continue
        if is_node_container(sbtype) and not how.flat:
            address = unproven_container(target, value)
            yield value, address
            if address is not None:
                continue
        pointer = sbtype.GetCanonicalType().IsPointerType()
        if depth < _DEPTH and (how.pointers or not pointer) and not _scalars(sbtype):
            children = (value.GetChildAtIndex(k) for k in range(value.GetNumChildren(how.children)))
            yield from _walk(target, children, how._replace(pointers=how.pointers - pointer), depth + 1)


def _children_shown(target):
    """How many children of one value LLDB prints (the target's max-children-count)."""
    return setting_number(target, "target.max-children-count", 256)


def _scalars(sbtype):
    """Is ``sbtype`` an array of numbers (or of arrays of them), which holds no string: not walked element by
    element (an int[256][256] is 65,536 values)."""
    sbtype = sbtype.GetCanonicalType()
    if not sbtype.IsArrayType():
        return False
    element = sbtype.GetArrayElementType().GetCanonicalType()
    if element.IsArrayType():
        return string_element(element) is None and _scalars(element)
    return element.GetTypeClass() in (lldb.eTypeClassBuiltin, lldb.eTypeClassEnumeration)
