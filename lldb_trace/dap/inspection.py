"""What a position shows a DAP client: frames, scopes, variables and expressions, as LLDB sees them there.

Values come from LLDB's frames (SBFrame.GetVariables, GetRegisters,
EvaluateExpression) over the plugin's process, which serves only what the
trace and its known states determine at the position.  A value LLDB cannot
read is shown as such ("<not known at this position (memory at 0x...)>",
"<unavailable: ...>"), never as a guess.  The ids handed out (frames,
variable containers) are valid until the thread moves, as DAP says.
"""

import re
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import PurePath
from typing import NamedTuple

import lldb

from ..commands.unknown_values import WHY_UNKNOWN
from ..debugger.histories import history_of, shown_frames, shows_history
from ..debugger.known_containers import unproven_container
from ..debugger.known_strings import unproven_string, unproven_text
from ..debugger.shown_state import unmapped_in
from ..values.machine_state import GENERAL
from . import console
from .arguments import RequestError

MAX_EXPRESSION = 4096  # characters: LLDB's parsers recurse per operator, and 10,000 of them overflow its stack
MAX_CHILDREN = 1000  # children listed by one 'variables' request at most; clients page with start and count
_PREVIEW_CHILDREN, _PREVIEW_CHARS = 6, 100
_FAILED_READ = re.compile(r"read memory from (0x[0-9a-fA-F]+) failed")
NOT_KNOWN = "<not known at this position>"
_NOT_ASKED = object()  # value_text's caller has not walked the container


class Handles:
    """Ids that the current stop hands out; ``reset`` (the thread moved) forgets them, and ids are never reused."""

    def __init__(self):
        self._items, self._next = {}, 1

    def reset(self):
        self._items.clear()

    def add(self, item):
        number, self._next = self._next, self._next + 1
        self._items[number] = item
        return number

    def get(self, number, what, kind):
        """The item of id ``number``, which must be a ``kind``: frame ids and variable references are distinct."""
        item = self._items.get(number)
        if not isinstance(item, kind):
            raise RequestError(f"{what} {number} is not known here (ids last until the thread moves)")
        return item


class FrameId(NamedTuple):
    tid: int
    index: int


class Children(NamedTuple):
    """A variable container: ``listed()`` gives its children (SBValues, or ``(name, text)`` notes)."""

    listed: Callable[[], Iterable]


def stack_trace(session, arguments):
    thread = session.thread(arguments.integer("threadId"), select=False)
    start, levels = arguments.integer("startFrame", 0), arguments.integer("levels", 0)
    total = thread.GetNumFrames()
    end = total if levels == 0 else min(total, start + levels)
    given = _given_pcs(session, thread)
    return {"stackFrames": [_frame(session, thread, k, given) for k in range(start, end)], "totalFrames": total}


def _frame(session, thread, index, given):
    frame = _standing_frame(session, thread, index, given)
    pc = frame.GetPC()
    name = frame.GetDisplayFunctionName() or f"{frame.GetModule().GetFileSpec().GetFilename()}`0x{pc:x}"
    shown = {
        "id": session.handles.add(FrameId(thread.GetThreadID(), index)),
        "name": name,
        "line": 0,
        "column": 0,
        "instructionPointerReference": f"0x{pc:x}",
    }
    entry = frame.GetLineEntry()
    path = entry.GetFileSpec().fullpath if entry.IsValid() else None
    if path and entry.GetLine() > 0:
        shown["source"] = {"name": PurePath(path).name, "path": path}
        session.sources.named(path)
        shown["line"] = entry.GetLine() - 1 + session.lines_from
        shown["column"] = max(entry.GetColumn(), 1) - 1 + session.columns_from
        return shown
    listing = session.sources.of_frame(session.target(), frame)
    if listing is not None:  # no line information: the function's disassembly stands in for its source
        shown["source"], line = listing
        shown["line"] = line - 1 + session.lines_from
    return shown


def _given_pcs(session, thread):
    """The pcs the plugin gave the trace's frames of ``thread``, innermost first; None where LLDB numbers the frames
    its own way (a core's unwinding, frames of inlined code it added) or no history is shown."""
    target = session.target()
    if not shows_history(target):
        return None
    given = [pc for _frame, pc in shown_frames(target, history_of(target, thread.GetThreadID()))]
    return given if len(given) == thread.GetNumFrames() else None


def _standing_frame(session, thread, index, given):
    """What frame ``index`` shows: its SBFrame, or for a frame of the trace's calls past the first, the symbol
    context at the pc the plugin gave it (``given``: _given_pcs).  LLDB finds an SBFrame again by its function and
    frame address, which those frames lack: each of a recursion's callers came back as frame 0 (its pc, its line)."""
    frame = thread.GetFrameAtIndex(index)
    if not index or given is None or not frame.IsSynthetic():
        return frame
    return _AtAddress(session.target(), given[index])


class _AtAddress:
    """The SBFrame calls _frame makes, answered from the symbol context at ``pc``."""

    def __init__(self, target, pc):
        self._pc = pc
        self._context = target.ResolveLoadAddress(pc).GetSymbolContext(lldb.eSymbolContextEverything)

    def GetPC(self):  # noqa: N802 (SBFrame's names)
        return self._pc

    def GetDisplayFunctionName(self):  # noqa: N802
        function = self._context.GetFunction()
        return function.GetDisplayName() if function.IsValid() else self._context.GetSymbol().GetDisplayName()

    def GetModule(self):  # noqa: N802
        return self._context.GetModule()

    def GetLineEntry(self):  # noqa: N802
        return self._context.GetLineEntry()

    def GetSymbol(self):  # noqa: N802
        return self._context.GetSymbol()


def frame_of(session, frame_id):
    """``(SBFrame, its index)`` a frame id names, with its thread and the thread's frame selected (as a console
    command sees)."""
    tid, index = session.handles.get(frame_id, "frame id", FrameId)
    thread = session.thread(tid)
    frame = thread.GetFrameAtIndex(index)
    if not frame.IsValid():
        raise RequestError(f"frame id {frame_id} names no frame now")
    thread.SetSelectedFrame(index)
    return frame, index


def _outer_traced(session, frame, index):
    """Whether ``frame`` is one of the trace's calls past the first: it has no registers (a trace records frame
    #0's), and its SBFrame resolves to the first frame of the same function (see _standing_frame)."""
    return index > 0 and frame.IsSynthetic() and shows_history(session.target())


def scopes(session, arguments):
    frame_id = arguments.integer("frameId")
    frame, index = frame_of(session, frame_id)
    no_registers = f"frame #{index} of the trace's calls has no registers (a trace records frame #0's)"
    locals_ = (
        (lambda: [("(not known)", no_registers)])
        if _outer_traced(session, frame, index)
        else (lambda: frame.GetVariables(True, True, False, True))
    )
    made = (
        ("Locals", "locals", locals_),
        ("Statics", None, lambda: frame.GetVariables(False, False, True, True)),
        ("Registers", "registers", lambda: _registers(session, frame, index)),
    )
    found = []
    for name, hint, listed in made:
        reference = session.handles.add(Children(listed))
        scope = {"name": name, "variablesReference": reference, "expensive": name == "Registers"}
        found.append({**scope, "presentationHint": hint} if hint else scope)
    return {"scopes": found}


def _registers(session, frame, index):
    """Frame 0's registers known at the position, and the names of the others.  An outer frame of the trace's
    calls (a scripted frame past the first) has none: a trace records frame 0's pc alone, and LLDB would show
    frame 0's registers there (register_read.py says the same in the console)."""
    if _outer_traced(session, frame, index):  # (a scripted frame's GetFrameID is 0 whatever its index)
        return [("(no registers)", f"frame #{index} has no registers in a trace, which records only frame #0's pc")]
    sets = [registers for registers in frame.GetRegisters() if registers.GetNumChildren()]
    known = {register.GetName() for registers in sets for register in registers}
    unknown = [name for name in GENERAL if name not in known]
    if index == 0 and unknown and shows_history(session.target()):
        return [*sets, ("not known at this position", ", ".join(unknown))]
    return sets


def variables(session, arguments):
    kind = arguments.string("filter", None)
    if kind not in (None, "indexed", "named"):
        raise RequestError(f"filter must be 'indexed' or 'named', not {kind!r}")
    children = session.handles.get(arguments.integer("variablesReference"), "variablesReference", Children)
    start, count = arguments.integer("start", 0), arguments.integer("count", 0)
    listed = (item for item in children.listed() if kind is None or _indexed(item) == (kind == "indexed"))
    listed = islice(listed, start, start + min(count or MAX_CHILDREN, MAX_CHILDREN))
    return {"variables": [_variable(session, item) for item in listed]}


def _indexed(item):
    """Is the child an array's element (``[3]``), not a named member or a note?"""
    return not isinstance(item, tuple) and (item.GetName() or "").startswith("[")


def _variable(session, item):
    if isinstance(item, tuple):  # a note: (name, text)
        return {"name": item[0], "value": item[1], "variablesReference": 0}
    text, reference = _text_and_children(session, item)
    shown = {
        "name": item.GetName() or "",
        "value": text,
        "type": item.GetDisplayTypeName() or "",
        "variablesReference": reference,
    }
    kind, path = item.GetValueType(), lldb.SBStream()
    if kind == lldb.eValueTypeRegister:
        shown["evaluateName"] = f"${item.GetName()}"
    elif kind != lldb.eValueTypeRegisterSet and item.GetExpressionPath(path) and path.GetData():
        shown["evaluateName"] = path.GetData()
    count = item.GetNumChildren(MAX_CHILDREN + 1) if shown["variablesReference"] else 0
    if count > MAX_CHILDREN:
        shown["indexedVariables"] = item.GetNumChildren()
    return shown


def _text_and_children(session, value):
    """``value_text`` and the reference of the value's children, the container's links walked once: a container
    not proven has none to show (its elements would be a formatter's guesses)."""
    unproven = unproven_container(value.GetTarget(), value)
    text = value_text(value, unproven=unproven)
    if unproven is not None or value.GetError().Fail() or not value.MightHaveChildren():
        return text, 0
    return text, session.handles.add(Children(lambda: iter(value))) if value.GetNumChildren(1) else 0


def value_text(value, depth=0, unproven=_NOT_ASKED):
    """How a value shows: LLDB's value and summary, a short preview of an aggregate, or why it is unknown
    (``unproven``: unproven_container's answer, where the caller has it)."""
    error = value.GetError()
    if error.Fail():
        return unknown_text(error.GetCString() or "", value.GetTarget())
    text, summary = value.GetValue(), value.GetSummary()
    unknown = unproven_string(value.GetTarget(), value) if summary is not None else None
    if unknown is None:  # a library container whose fields or links are not known
        unknown = unproven_container(value.GetTarget(), value) if unproven is _NOT_ASKED else unproven
    if unknown is not None:  # LLDB shows the bytes it could read as the whole string ("" for none)
        summary = unproven_text(value.GetTarget(), unknown)
    if text is not None or summary is not None:
        return " ".join(part for part in (text, summary) if part)
    if not value.MightHaveChildren() or not value.GetNumChildren(1):
        return NOT_KNOWN if value.GetValueType() == lldb.eValueTypeRegister else "<unavailable>"
    if depth:
        return "{...}"
    parts = [f"{child.GetName()}={value_text(child, depth + 1)}" for child in islice(value, _PREVIEW_CHILDREN)]
    preview = "{" + ", ".join(parts) + (", ...}" if value.GetNumChildren(_PREVIEW_CHILDREN + 1) > len(parts) else "}")
    return preview if len(preview) <= _PREVIEW_CHARS else preview[: _PREVIEW_CHARS - 4] + "...}"


def unknown_text(error, target=None):
    """An SBValue's error as a value: a failed read in a trace is memory not known at the position (or, at a
    core, through a wild pointer, memory not mapped)."""
    found = _FAILED_READ.search(error)
    if found and target is not None and unmapped_in(target, int(found.group(1), 16)):
        return f"<not mapped (memory at {found.group(1)})>"
    if found:
        return f"{NOT_KNOWN[:-1]} (memory at {found.group(1)})>"
    return f"<unavailable: {' '.join(error.split())}>"


def evaluate(session, arguments):
    """A watch, hover or console expression in the frame; in the console an LLDB command (console.py).  Without a
    context (the protocol makes it optional) it is an expression: only the console's lines run commands."""
    text = arguments.string("expression")
    if len(text) > MAX_EXPRESSION:
        raise RequestError(f"the expression is {len(text)} characters long: at most {MAX_EXPRESSION} are evaluated")
    context = arguments.string("context", "watch")
    frame, index = frame_of(session, arguments.integer("frameId")) if "frameId" in arguments else (None, 0)
    if context == "repl" and console.is_command(session, text, frame):
        return console.run(session, text.removeprefix("`"))
    if frame is not None and _outer_traced(session, frame, index):
        raise RequestError(f"{text} is not known: frame #{index} of the trace's calls has no registers (select #0)")
    if frame is None:
        frame = session.target().GetProcess().GetSelectedThread().GetSelectedFrame()
    value = frame.GetValueForVariablePath(text)
    if not value.IsValid() or value.GetError().Fail():
        if context == "hover":  # hovering runs no expressions: a name or a member path only
            raise RequestError(_error_text(value, text))
        value = frame.EvaluateExpression(text)
    if not value.IsValid() or value.GetError().Fail():
        return _printed(session, text, value)
    text, reference = _text_and_children(session, value)
    return {"result": text, "type": value.GetDisplayTypeName() or "", "variablesReference": reference}


def _printed(session, text, value):
    """What LLDB's ``p`` says of an expression SBFrame could not evaluate: on a trace the plugin answers some
    itself (``&global`` while the global is not known) and words the others (what is not known, and where)."""
    succeeded, output, error, _ = session.command(f"dwim-print -- {text}")
    said = (output + error).strip()
    if succeeded and said and not said.startswith("error:"):
        return {"result": said, "variablesReference": 0}
    said = "\n".join(line for line in said.splitlines() if not line.startswith("note:")).strip()
    said = said.removeprefix("error:").strip().removesuffix(f": {WHY_UNKNOWN}")
    raise RequestError(said.splitlines()[0] if said.startswith(f"{text} ") else _error_text(value, text))


def _error_text(value, text):
    """An expression's error in one line; a failed read said as the plugin says it."""
    error = value.GetError().GetCString() if value.IsValid() else None
    if not error:
        return f"{text[:80]}: no such variable here"
    found = _FAILED_READ.search(error)
    if found:
        return f"{text[:80]} is not known at this position (it needs memory at {found.group(1)})"
    lines = [line.strip() for line in error.splitlines()]
    kept = [line.removeprefix("error:").strip() for line in lines if line and not line[0].isdigit() and "|" not in line]
    kept = [line for line in kept if "Expression evaluation in pure C" not in line]  # LLDB's note, as error or note
    return (
        " ".join(line.split(": ", 1)[1] if line.startswith("<user expression") else line for line in kept) or (lines[0])
    )


HANDLERS = {"stackTrace": stack_trace, "scopes": scopes, "variables": variables, "evaluate": evaluate}
