"""LLDB's ``watchpoint`` commands on a loaded trace: set, list, delete, enable and disable the plugin's own.

On a trace target LLDB answers ``watchpoint set`` with "watchpoints are not
supported" (its process is a ScriptedProcess), so these commands are
overridden there, as the routed ``trace`` commands are: ``watchpoint set
variable`` and ``watchpoint set expression`` add a history watchpoint
(debugger/history_watchpoints.py) that ``pt continue`` and ``pt
reverse-continue`` stop at, and ``watchpoint list/delete/enable/disable`` show
and manage them as LLDB shows its own.  In a live process's history view they
are LLDB's own commands on the live process (what to watch resolved in the
view's frame): one set of watchpoints, which ``continue`` honours live and the
movements honour in the past.  On any other target LLDB's commands run.
"""

import shlex

import lldb

from ..debugger import history_watchpoints
from ..debugger.histories import live_of, shows_history
from ..errors import LldbTraceError
from .base import address_of, parse_number, variable_in_memory

_KINDS = {"write": "write", "w": "write", "read": "read", "r": "read", "read_write": "read_write", "rw": "read_write",
          "modify": "modify", "m": "modify"}  # fmt: skip
_SHORT_KIND = {"write": "w", "read": "r", "read_write": "rw", "modify": "m"}
_delegating = []  # non-empty while LLDB's own watchpoint command runs for a history view's live process


def install(debugger):
    interpreter = debugger.GetCommandInterpreter()
    commands = {
        "watchpoint set variable": _set_variable,
        "watchpoint set expression": _set_expression,
        "watchpoint list": _list,
        "watchpoint delete": _delete,
        "watchpoint enable": lambda target, args: _enable(target, args, True),
        "watchpoint disable": lambda target, args: _enable(target, args, False),
        "watchpoint modify": _unsupported,
        "watchpoint ignore": _unsupported,
        "watchpoint command add": _unsupported,
    }
    for command, run in commands.items():
        interpreter.SetCommandOverrideCallback(command, _override(debugger, command, run))


def _override(debugger, command, run):
    words = len(command.split())  # LLDB passes the whole command line, or its words one by one

    def override(*argv):
        target = debugger.GetSelectedTarget()
        if _delegating or not shows_history(target):
            return False  # a live process or a core: LLDB's own watchpoints
        args = " ".join(" ".join(argv).split(" ")[words:]).strip()
        live = live_of(target)
        try:
            if live is not None:  # a live process's past: its watchpoints are LLDB's own, on the live process
                text, failed = _on_live(debugger, live, target, command, args)
            else:
                text, failed = run(target, args), False
        except LldbTraceError as error:
            text, failed = f"error: {error}", True
        stream = debugger.GetErrorFile() if failed else debugger.GetOutputFile()
        stream.Write(f"{text}\n".encode())
        stream.Flush()
        return True

    return override


def _unsupported(_target, _args):
    raise LldbTraceError(
        "a trace's watchpoints take no condition, ignore count or commands: each stops every movement at its bytes"
        " ('watchpoint disable ID' sets one aside)"
    )


def _on_live(debugger, live, view, command, args):
    """``(output, failed)`` of a watchpoint command given in a history view of the live target ``live``: LLDB's
    own command on the live process, which the view's movements honour too; a variable or expression is
    resolved in the view's frame (the past), then watched by its address."""
    if command.startswith("watchpoint set"):
        kind, size, text = _options(args, default_kind=None)
        address, size = _resolved(view, command, text, size)
        options = (f" -w {kind}" if kind else "") + f" -s {size}"
        args = f"{options} -- {address:#x}"
        command = "watchpoint set expression"
    result = lldb.SBCommandReturnObject()
    _delegating.append(command)  # LLDB's own command runs: the override steps aside
    try:
        interpreter = debugger.GetCommandInterpreter()
        frame = live.GetProcess().GetSelectedThread().GetSelectedFrame()  # its process: LLDB needs one to watch
        interpreter.HandleCommand(f"{command} {args}".strip(), lldb.SBExecutionContext(frame), result)
    finally:
        _delegating.pop()
    text = (result.GetOutput() or "") + (result.GetError() or "")
    return text.rstrip("\n"), not result.Succeeded()


def _resolved(view, command, text, size):
    """``(address, size)`` that ``watchpoint set variable|expression`` names in the view's selected frame."""
    if command == "watchpoint set variable":
        if not text:
            raise WatchpointError("give a variable to watch: watchpoint set variable NAME")
        address, byte_size, _ = _variable(view, text)
        return address, size or byte_size
    if not text:
        raise WatchpointError("give an address: watchpoint set expression -- ADDRESS")
    return address_of(view, text), size or 8


class WatchpointError(LldbTraceError):
    """A watchpoint command given wrongly."""


def _options(text, default_kind="write"):
    """``(kind, size or None, the rest)`` from ``[-w KIND] [-s SIZE] [--] REST``."""
    words = shlex.split(text)
    kind, size = default_kind, None
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option == "--":
            break
        if option in ("-w", "--watch") and words:
            kind = _KINDS.get(words.pop(0))
            if kind is None:
                raise WatchpointError("-w takes read, write, read_write or modify")
        elif option in ("-s", "--size") and words:
            size = parse_number(words.pop(0))
            if size not in (1, 2, 4, 8):
                raise WatchpointError("-s takes 1, 2, 4 or 8")
        else:
            raise WatchpointError(f"unknown option '{option}' (give -w KIND, -s SIZE)")
    return kind, size, " ".join(words)


def _set_variable(target, args):
    kind, size, name = _options(args)
    if not name:
        raise WatchpointError("give a variable to watch: watchpoint set variable NAME")
    address, byte_size, declared = _variable(target, name)
    where = f"{declared.GetFileSpec().fullpath}:{declared.GetLine()}" if declared.IsValid() else None
    return _added(target, address, size or byte_size, kind, name, where)


def _variable(target, name):
    """``(address, size, declaration)`` of variable ``name`` in the selected frame or a global one, which is in
    memory (its value need not be known at this position)."""
    found = variable_in_memory(target, name)
    if found is not None:
        return found
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    if frame.GetValueForVariablePath(name).IsValid():
        raise WatchpointError(
            f"LLDB gives no address of '{name}' here (a register variable, or a local whose bytes are not known at "
            "this position): watch its address instead (watchpoint set expression -- ADDRESS)"
        )
    raise WatchpointError(f"no variable '{name}' in the selected frame, nor a global one")


def _set_expression(target, args):
    kind, size, expression = _options(args)
    if not expression:
        raise WatchpointError("give an address: watchpoint set expression -- ADDRESS")
    return _added(target, address_of(target, expression), size or 8, kind, expression, None)


def _added(target, address, size, kind, spec, declared):
    watchpoint = history_watchpoints.add(target, address, size, kind, spec, declared)
    access = {"read": "read", "read_write": "read or write", "modify": "write that changes it"}.get(kind, "write")
    moves = "'pt continue', 'pt reverse-continue' and the stepping commands stop right after each"
    return f"Watchpoint created: {_describe(watchpoint)}\n(a history watchpoint: {moves} {access})"


def _describe(watchpoint):
    state = "enabled" if watchpoint.enabled else "disabled"
    text = (f"Watchpoint {watchpoint.id}: addr = 0x{watchpoint.address:x} size = {watchpoint.size}"
            f" state = {state} type = {_SHORT_KIND[watchpoint.kind]}")  # fmt: skip
    if watchpoint.declared:
        text += f"\n    declare @ '{watchpoint.declared}'"
    return text + f"\n    watchpoint spec = '{watchpoint.spec}'\n    hit_count = {watchpoint.hit_count}"  # as LLDB


def _list(target, _args):
    found = history_watchpoints.watchpoints(target)
    if not found:
        return "No watchpoints currently set."
    return "Current watchpoints:\n" + "\n".join(_describe(watchpoint) for watchpoint in found)


def _chosen(target, args):
    found = history_watchpoints.watchpoints(target)
    ids = [parse_number(word) for word in shlex.split(args)]
    if None in ids:
        raise WatchpointError(f"watchpoint ids are numbers: '{args}'")
    unknown = [str(i) for i in ids if i not in {w.id for w in found}]
    if unknown:
        raise WatchpointError(f"no watchpoint {', '.join(unknown)} ('watchpoint list' lists them)")
    return [w for w in found if not ids or w.id in ids]


def _delete(target, args):
    chosen = _chosen(target, args)
    found = history_watchpoints.watchpoints(target)
    for watchpoint in chosen:
        found.remove(watchpoint)
    return f"{len(chosen)} watchpoints deleted."


def _enable(target, args, enabled):
    chosen = _chosen(target, args)
    for watchpoint in chosen:
        watchpoint.enabled = enabled
    return f"{len(chosen)} watchpoints {'enabled' if enabled else 'disabled'}."
