"""``p`` and ``expression`` on a loaded trace: a value the trace does not hold says so.

A loaded trace's process serves only the memory a trace can vouch for, the
modules' code and read-only data (debugger/scripted_process.py).  LLDB's
expression evaluator reports any other read as "read memory from 0x... failed
(0 of 8 bytes read)", which reads like a broken debugger.  These overrides run
LLDB's own command (re-entered with the override stepping aside) and, when it
failed on such a read in a loaded trace, say that the value is not known at
this position, and where the memory is.  Elsewhere (a live process, a core
file) they step aside at once.
"""

import re

import lldb

from ..debugger.histories import shows_history

OVERRIDDEN = ("expression", "dwim-print")  # ``p`` and ``print`` are dwim-print since LLDB 16
_FAILED_READ = re.compile(r"read memory from (0x[0-9a-fA-F]+) failed")
_running = []  # non-empty while LLDB's own command runs inside an override


def install(debugger):
    interpreter = debugger.GetCommandInterpreter()
    for command in OVERRIDDEN:
        interpreter.SetCommandOverrideCallback(command, _override(debugger))


def _override(debugger):
    def override(*argv):
        command = " ".join(argv)
        if _running or not _has_expression(command) or not shows_history(debugger.GetSelectedTarget()):
            return False
        result = lldb.SBCommandReturnObject()
        _running.append(command)
        try:
            debugger.GetCommandInterpreter().HandleCommand(command, result)
        finally:
            _running.pop()
        _write(debugger.GetOutputFile(), result.GetOutput())
        error = result.GetError()
        found = _FAILED_READ.search(error)
        if found is not None:
            error = f"error: {_unknown_value(debugger.GetSelectedTarget(), _expression_text(command), found)}\n"
        _write(debugger.GetErrorFile(), error)
        return True

    return override


def _unknown_value(target, text, found):
    address = int(found.group(1), 16)
    where = _place(target, address)
    return (
        f"{text or 'the value'} is not known at this position: a trace records which instructions ran, not "
        f"the memory they read and wrote (it needs {address:#x}{where}); only code and read-only data can be read"
    )


def _place(target, address):
    """``, in taskq`last_seen (.bss)``: the symbol and section holding ``address``, when LLDB knows them."""
    resolved = target.ResolveLoadAddress(address)
    symbol, section = resolved.GetSymbol(), resolved.GetSection()
    parts = []
    if symbol.IsValid():
        parts.append(f"{resolved.GetModule().GetFileSpec().GetFilename()}`{symbol.GetName()}")
    if section.IsValid():
        parts.append(f"({section.GetName()})")
    return f", in {' '.join(parts)}" if parts else ""


def _has_expression(command):
    """Does the command carry an expression? Without one LLDB opens its multi-line editor: left to LLDB."""
    return bool(_expression_text(command))


def _expression_text(command):
    """The expression of ``expression [OPTIONS --] TEXT`` (empty without one)."""
    if " -- " in command:
        return command.split(" -- ", 1)[1].strip()
    parts = command.split(None, 1)
    return parts[1].strip() if len(parts) > 1 and parts[1].strip() != "--" else ""


def _write(stream, text):
    if text and stream.IsValid():
        stream.Write(text.encode())
        stream.Flush()
