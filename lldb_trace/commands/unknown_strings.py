"""``frame variable``, ``target variable`` and ``p`` on a loaded trace: a string over memory not known says so.

LLDB shows a char array or char pointer as the string it could read, and a
string over bytes the trace does not determine as ``""`` or cut short
(debugger/known_strings.py).  The values the command shows (``p``'s result)
are walked in the order LLDB prints them (aggregates opened, pointers
followed as deep as ``--ptr-depth`` says), and each string not proven has its
summary replaced by where the first unknown byte lies; one the walk cannot
place in the output (a formatter's own layout, say) is named in a note line.
"""

import re
import shlex
from itertools import pairwise

from ..debugger.known_strings import string_element, unproven_string, unproven_text

_CHILDREN_SHOWN = 256  # LLDB's target.max-children-count: the children it prints of one value
_DEPTH = 32  # how deep the walk opens aggregates (LLDB's own limit is far deeper; real structs are not)
_OPTION_VALUES = {"-f", "--format", "-D", "--depth", "-P", "--ptr-depth", "-Y", "--show-all-children", "-Z",
                  "--element-count", "-y", "--summary", "-z", "--summary-string", "-d", "--dynamic-type",
                  "-S", "--synthetic-type", "-V", "--validate"}  # fmt: skip


def mark_unproven(target, roots, output, pointers=0):
    """``output`` of a command showing the values ``roots`` (and their children, and what they point to
    ``pointers`` deep) with each string summary that the position does not prove replaced, or a note naming it."""
    if '"' not in output:
        return output
    found = [(value, address) for value in _walk(roots, pointers) if (address := unproven_string(target, value))]
    notes, at = [], 0
    for value, address in found:
        unknown = unproven_text(target, address)
        name = re.escape(value.GetName() or "")
        # ``name = 0x... "text"`` inside a value, ``(type) name = "text"`` or ``(char *) 0x... "text"`` (p's)
        shown = re.compile(rf"(?:(?<![\w\]]){name} = |\) )(?:0x[0-9a-fA-F]+ )?{re.escape(value.GetSummary())}")
        match = shown.search(output, at)
        if match is None:
            notes.append(f"note: the string of {value.GetName()} is {unknown[1:-1]}")
            continue
        start = match.end() - len(value.GetSummary())  # the summary's own text: the pointer before it stays
        output = output[:start] + unknown + output[match.end() :]
        at = start + len(unknown)
    return output + "".join(f"{note}\n" for note in notes)


def shown_variables(target, argv):
    """The values ``frame variable`` or ``target variable`` (``argv``: the command's words) shows: its variable
    paths, or every local and argument (globals for ``target variable``, which names them)."""
    words = _paths(argv[2:])
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    if argv[0] == "target":
        return [target.FindFirstGlobalVariable(name) for name in words]
    if not frame.IsValid():
        return []
    if not words:
        return list(frame.GetVariables(True, True, False, True))
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


def _walk(values, pointers=0, depth=0):
    """The values and their children, depth first, in the order LLDB prints them: each char array and pointer
    (``pointers``: how many pointers deep LLDB shows what they point to)."""
    for value in values:
        if value is None or not value.IsValid():
            continue
        if string_element(value.GetType()) is not None:
            yield value
            continue
        pointer = value.GetType().GetCanonicalType().IsPointerType()
        if depth < _DEPTH and (pointers or not pointer):
            count = value.GetNumChildren(_CHILDREN_SHOWN)
            children = (value.GetChildAtIndex(k) for k in range(count))
            yield from _walk(children, pointers - pointer, depth + 1)
