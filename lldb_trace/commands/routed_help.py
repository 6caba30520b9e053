"""``help`` for the built-in commands that routing hands to the ``pt`` commands.

LLDB's help of ``trace dump`` describes LLDB's own command, not the one that
runs.  LLDB lets a plugin override any command, ``help`` included: for a
routed built-in (named in full, abbreviated or through an alias, as
``SBCommandInterpreter.ResolveCommand`` resolves it) the override prints
what runs instead; every other ``help`` is LLDB's own.

``trace load|schema|dump|save`` take the ``pt`` command's options, so their
help is the ``pt`` command's, under the built-in's name.  The ``thread trace
dump`` commands keep LLDB's options, so their help is LLDB's, after a note on
what runs.  Like every routed command, the text goes to the debugger's
output, not to the caller's SBCommandReturnObject.
"""

import re
import textwrap

import lldb


def install(debugger, routes, native_renames):
    """Override ``help`` for the built-ins in ``routes`` (built-in -> pt command line)."""
    interpreter = debugger.GetCommandInterpreter()
    asking_lldb = []  # non-empty while the override asks LLDB for its own help text

    def native_help(name):
        asking_lldb.append(name)
        try:
            return _output_of(interpreter, f"help {name}")
        finally:
            asking_lldb.pop()

    def help_override(*argv):
        words = list(argv[1:])
        if asking_lldb or not words or any(word.startswith("-") for word in words):
            return False  # LLDB's own help
        name = _resolved(interpreter, words)
        width = max(debugger.GetTerminalWidth(), 40)
        if name == "trace":
            text = native_help(name) + "\n" + _wrapped(_TRACE_NOTE, width)
        elif name in routes:
            text = _routed_help(interpreter, name, routes[name], native_help, native_renames, width)
        else:
            return False
        _write(debugger, text)
        return True

    interpreter.SetCommandOverrideCallback("help", help_override)


_TRACE_NOTE = (
    "lldb_trace runs 'trace load', 'schema', 'dump' and 'save' with its 'pt' commands"
    " ('help trace dump' says how); set LLDB_TRACE_NO_ROUTING=1 before importing lldb_trace to keep LLDB's own."
)


def _routed_help(interpreter, name, replacement, native_help, native_renames, width):
    pt_command = " ".join(replacement.split()[:2])
    if not name.startswith("thread "):
        note = f"'{name}' runs '{pt_command}' (lldb_trace routes it; LLDB_TRACE_NO_ROUTING=1 keeps LLDB's own):"
        text = _output_of(interpreter, f"help {pt_command}")
        own_name = pt_command.split()[1]
        text = re.sub(rf"^(Syntax: |  ){re.escape(own_name)}(?= |$)", rf"\g<1>{name}", text, flags=re.M)
        return _wrapped(note, width) + "\n\n" + text
    native = native_help(name)
    renamed = [f"{option} is its {pt}" for option, pt in native_renames if f"( {option.split('/')[1]} " in native]
    listed = f"listed below ({', '.join(renamed)})" if renamed else "listed below"
    note = (
        f"'{name}' runs '{replacement}' (lldb_trace routes it; LLDB_TRACE_NO_ROUTING=1 keeps LLDB's own)."
        f" It takes LLDB's options, {listed}, and the options of '{pt_command}' in their long form; the output is"
        f" {pt_command}'s: 'help {pt_command}' describes both."
    )
    return _wrapped(note, width) + "\n\n" + native


def _resolved(interpreter, words):
    """The full name of the command ``words`` name (abbreviations and aliases expanded), or None."""
    result = lldb.SBCommandReturnObject()
    interpreter.ResolveCommand(" ".join(words), result)
    return result.GetOutput().strip() if result.Succeeded() else None


def _output_of(interpreter, command):
    result = lldb.SBCommandReturnObject()
    interpreter.HandleCommand(command, result)
    return result.GetOutput()


def _wrapped(text, width):
    return textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False)


def _write(debugger, text):
    output = debugger.GetOutputFile()
    output.Write((text.rstrip("\n") + "\n").encode())
    output.Flush()
