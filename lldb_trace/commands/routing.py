"""Route LLDB's built-in ``trace`` and ``thread trace dump`` commands to the ``pt`` commands.

LLDB refuses to replace its built-in commands, but SetCommandOverrideCallback
runs a callback instead of them (before their option parsing).  The callback
re-issues the command as ``pt ...`` through HandleCommand, which prints its
output and errors as usual.  LLDB_TRACE_NO_ROUTING=1 keeps LLDB's own commands.
"""

import os
import re

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
    "-E": ("--events", False), "--only-events": ("--events", False),
    "-F": ("--file", True), "--file": ("--file", True),
    "-J": ("--json", False), "--pretty-json": ("--json", False),
    "-a": ("--all", False), "--all": ("--all", False),
    "-c": ("--count", True), "--count": ("--count", True),
    "-e": ("--events", False), "--events": ("--events", False),
    "-f": ("--forwards", False), "--forwards": ("--forwards", False),
    "-i": ("--id", True), "--id": ("--id", True),
    "-j": ("--json", False), "--json": ("--json", False),
    "-k": (None, False), "--kind": (None, False),
    "-r": ("--raw", False), "--raw": ("--raw", False),
    "-s": ("--offset", True), "--skip": ("--offset", True),
    "-t": ("--time", False), "--time": ("--time", False),
}  # fmt: skip

_PLAIN = re.compile(r"^[\w./:@%+=,-]+$")


def quote(argument):
    """Quote one argument so LLDB's command parser reads it back unchanged."""
    if _PLAIN.match(argument):
        return argument
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


def thread_options(debugger, arguments):
    """A ``thread trace dump ...`` command's options in pt's terms, its thread indexes (or ``all``) as ``-t TID``."""
    process = debugger.GetSelectedTarget().GetProcess()
    translated = []
    arguments = iter(arguments)
    for argument in arguments:
        if argument in _NATIVE_OPTIONS:
            option, takes_value = _NATIVE_OPTIONS[argument]
            value = next(arguments, "") if takes_value else None
            if option:
                translated.append(option if value is None else f"{option} {quote(value)}")
        elif argument == "all" and process.IsValid():
            translated += [f"-t {thread.GetThreadID()}" for thread in process]
        elif argument.isdigit() and process.IsValid() and process.GetThreadByIndexID(int(argument)).IsValid():
            translated.append(f"-t {process.GetThreadByIndexID(int(argument)).GetThreadID()}")
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
    return routed


def _forwarder(debugger, builtin, replacement):
    words = len(builtin.split())

    def forward(*argv):
        arguments = list(argv[words:])
        if builtin.startswith("thread "):
            arguments = thread_options(debugger, arguments)
        else:
            arguments = [quote(argument) for argument in arguments]
        debugger.HandleCommand(" ".join([replacement, *arguments]))
        return True

    return forward
