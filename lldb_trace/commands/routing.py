"""Route LLDB's built-in ``trace`` and ``thread trace dump`` commands to the ``pt`` commands.

LLDB refuses to replace its built-in commands, but SetCommandOverrideCallback
runs a callback instead of them (before their option parsing).  The callback
re-issues the command as ``pt ...`` through HandleCommand, which prints its
output and errors as usual.  ``help`` of a routed command, and ``-h``/``--help``
on one, show what runs instead (routed_help.py).  LLDB_TRACE_NO_ROUTING=1 keeps
LLDB's own commands.
"""

import os
import re

from . import routed_help
from .base import parse_number

DISABLE_VARIABLE = "LLDB_TRACE_NO_ROUTING"

# built-in command -> pt command; a route is installed only if its pt command exists.
ROUTES = {
    "trace load": "pt load",
    "trace schema": "pt schema",
    "trace dump": "pt dump",
    "trace save": "pt save",
    "thread trace dump info": "pt dump",
    "thread trace dump instructions": "pt dump --instructions",
    "thread trace dump function-calls": "pt dump --function-calls",
}

# LLDB's own options of the routed thread commands -> (pt dump option, takes a value).
_NATIVE_OPTIONS = {
    "-C": ("--continue", False), "--continue": ("--continue", False),
    "-E": ("--only-events", False), "--only-events": ("--only-events", False),
    "-F": ("--file", True), "--file": ("--file", True),
    "-J": ("--json", False), "--pretty-json": ("--json", False),
    "-a": ("--all", False), "--all": ("--all", False),
    "-c": ("--count", True), "--count": ("--count", True),
    "-e": ("--events", False), "--events": ("--events", False),
    "-f": ("--forwards", False), "--forwards": ("--forwards", False),
    "-i": ("--id", True), "--id": ("--id", True),
    "-j": ("--json", False), "--json": ("--json", False),
    "-k": ("--kind", False), "--kind": ("--kind", False),
    "-r": ("--raw", False), "--raw": ("--raw", False),
    "-s": ("--offset", True), "--skip": ("--offset", True),
    "-t": ("--time", False), "--time": ("--time", False),
}  # fmt: skip

_VALUE_NAMES = {"--file": "FILE", "--count": "COUNT", "--id": "ID", "--offset": "COUNT"}  # for the error
_PLAIN = re.compile(r"^[\w./:@%+=,-]+$")


def quote(argument):
    """Quote one argument so LLDB's command parser reads it back unchanged."""
    if _PLAIN.match(argument):
        return argument
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


# LLDB's long options that pt dump names differently, for the help: (LLDB's, pt dump's).
RENAMED = (("-s/--skip", "--offset"), ("-J/--pretty-json", "--json"))


class NativeArgumentError(ValueError):
    """A ``thread trace dump`` argument that cannot be translated: a thread index that names no thread, an option
    missing its value."""


def thread_options(debugger, arguments):
    """A ``thread trace dump ...`` command's options in pt's terms, its thread indexes (or ``all``) as ``-t TID``."""
    process = debugger.GetSelectedTarget().GetProcess()
    translated = []
    arguments = iter(arguments)
    for argument in arguments:
        index = parse_number(argument)
        if argument in _NATIVE_OPTIONS:
            option, takes_value = _NATIVE_OPTIONS[argument]
            value = next(arguments, None) if takes_value else None
            if takes_value and value is None:
                raise NativeArgumentError(f"{argument} needs a value: {argument} {_VALUE_NAMES[option]}")
            translated.append(option if value is None else f"{option} {quote(value)}")
        elif argument == "all" and process.IsValid():
            translated += [f"-t {thread.GetThreadID()}" for thread in process]
        elif index is not None and process.IsValid():
            thread = process.GetThreadByIndexID(index)
            if not thread.IsValid():
                raise NativeArgumentError(f"no thread with index {argument}: 'thread list' shows the indexes")
            translated.append(f"-t {thread.GetThreadID()}")
        else:
            translated.append(quote(argument))
    return translated


def install(debugger, available):
    """Install every route whose pt command is in ``available``; returns the routed built-ins."""
    if os.environ.get(DISABLE_VARIABLE, "") not in ("", "0"):
        return []
    interpreter = debugger.GetCommandInterpreter()
    routed = []
    for builtin, replacement in ROUTES.items():
        if " ".join(replacement.split()[:2]) in available and interpreter.SetCommandOverrideCallback(
            builtin, _forwarder(debugger, builtin, replacement)
        ):
            routed.append(builtin)
    if routed:
        routed_help.install(debugger, {builtin: ROUTES[builtin] for builtin in routed}, RENAMED)
    return routed


def _forwarder(debugger, builtin, replacement):
    words = len(builtin.split())

    def forward(*argv):
        arguments = list(argv[words:])
        if _asks_for_help(arguments):
            debugger.HandleCommand(f"help {builtin}")
            return True
        try:
            if builtin.startswith("thread "):
                arguments = thread_options(debugger, arguments)
            else:
                arguments = [quote(argument) for argument in arguments]
        except NativeArgumentError as error:
            _error(debugger, f"{builtin}: {error}")
            return True
        debugger.HandleCommand(" ".join([replacement, *arguments]))
        return True

    return forward


def _asks_for_help(arguments):
    options = arguments[: arguments.index("--")] if "--" in arguments else arguments
    return "-h" in options or "--help" in options


def _error(debugger, message):
    """An error of the routing itself, printed as LLDB prints a command's error."""
    stream = debugger.GetErrorFile()
    stream.Write(f"error: {message}\n".encode())
    stream.Flush()
