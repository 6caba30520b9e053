"""``p``, ``expression`` and ``memory read`` on a loaded trace: a value the trace does not hold says so.

A loaded trace's process serves only the memory a trace can vouch for, the
modules' code and read-only data (debugger/scripted_process.py).  LLDB's
expression evaluator reports any other read as "read memory from 0x... failed
(0 of 8 bytes read)", which reads like a broken debugger, and shows a struct's
unreadable fields that way inside its value: the overrides of ``expression``,
``p`` (dwim-print), ``frame variable`` and ``target variable`` run LLDB's
command (re-entered with the override stepping aside) and say instead that the
value is not known at this position, and where it lives.  Where there is
nothing to say they step aside, and LLDB runs its command again so that its
result holds the output (an ``expression`` then numbers its result twice).
``memory read`` (and ``x``) fails on the stack or the heap with the process's
own message, which names the address the
command asked for (LLDB reads whole cache lines from elsewhere); but on a
writable section LLDB falls back to the module file, whose bytes are only what
the program started with (``.bss`` as zeros, the GOT unrelocated), and shows
them as if they were memory: the override refuses that output.  Where an
override prints an error itself, LLDB counts the command as done (``lldb
--batch`` goes on), as for the routed commands.  Elsewhere (a live process, a
core file) the overrides step aside at once.
"""

import re

import lldb

from ..debugger import registry
from ..debugger.histories import shows_history
from ..debugger.register_layout import X86_REGISTER_NAMES
from ..debugger.scripted_process import (
    MAPPED_FROM,
    NOT_MAPPED_AT_CORE,
    NOTHING_MAPPED,
    WHY_UNKNOWN,
    name_asked_address,
)
from ..debugger.shown_state import known_memory, unmapped_in
from .base import lldbs_own
from .routing import quote
from .unknown_strings import mark_unproven, pointer_depth, shown_variables

EXPRESSIONS = ("expression", "dwim-print")  # ``p`` and ``print`` are dwim-print since LLDB 16
VARIABLES = ("frame variable", "target variable")
_UNKNOWN_REGISTER = re.compile(r"undeclared identifier '\$(\w+)'")
_FAILED_READ = re.compile(
    r"read memory from (0x[0-9a-fA-F]+) failed|failed to dereference pointer from (0x[0-9a-fA-F]+)"  # (a VLA's size)
)
_UNLOCATED = re.compile(r"No frame base available for this historical stack frame|unable to convert register kind")
_UNREAD_RESULT = "couldn't read its memory"  # LLDB reading an expression's result (a struct's field) back
# how LLDB shows a value it could not read at a past position: memory, the frame base, a register it cannot name,
# a location that reads memory (a VLA's, through a saved pointer: our whole error, and its line break, inside)
# (LLDB 22 adds an empty line after each, but inside an array's parentheses)
_UNREAD_VALUE = re.compile(
    r"<read memory from 0x[0-9a-fA-F]+ failed \(\d+ of \d+ bytes read\)>(\n(?=\n))?"
    r"|<failed to dereference pointer from 0x[0-9a-fA-F]+ for DW_OP_deref(?:_size)?: [^<>]*>(\n(?=\n))?"
    r"|<(?:parent failed to evaluate: )?No frame base available for this historical stack frame\.>(\n(?=\n))?"
    r"|<unable to convert register kind=\d+ reg_num=\d+ to a native register number>(\n(?=\n))?"
)
UNKNOWN_VALUE = "<not known at this position>"
_SHOWN_LINE = re.compile(r"^(0x[0-9a-fA-F]+)[:\s]", re.M)  # a line of memory read's output, at its address
_LINE_BYTES = 64  # the most bytes one line of memory read shows, for the last line's reach
# the last line's items, where their text says how many bytes they are: hex words (x/gx), or bytes and their chars
_HEX_ITEMS = re.compile(r"^0x[0-9a-fA-F]+: ((?:0x[0-9a-fA-F]+)(?: 0x[0-9a-fA-F]+)*)$")
_BYTE_ITEMS = re.compile(r"^0x[0-9a-fA-F]+: ([0-9a-fA-F]{2}(?: [0-9a-fA-F]{2})*)(?: {2,}.*)?$")
_BAD_START = "invalid start address expression"
# LLDB's memory read when the process served fewer bytes than asked: it shows the rest as zeros
_PARTIAL_READ = re.compile(r"not all bytes \((\d+)\s*/\s*(\d+)\) were able to be read from (0x[0-9a-fA-F]+)", re.I)
_ADDRESS_OF = re.compile(r"&\s*([A-Za-z_][\w:]*)")
# memory read's options that take a value (the rest are flags)
_VALUED_OPTIONS = {"-c", "--count", "-s", "--size", "-f", "--format", "-l", "--num-per-line", "-o", "--outfile",
                   "-t", "--type", "-E", "--offset", "-L", "--language", "-x", "--gdb-format"}  # fmt: skip
_running = []  # non-empty while LLDB's own command runs inside an override


def install(debugger):
    interpreter = debugger.GetCommandInterpreter()
    for command in (*EXPRESSIONS, *VARIABLES):
        interpreter.SetCommandOverrideCallback(command, _override(debugger, command in EXPRESSIONS))
    interpreter.SetCommandOverrideCallback("memory read", _memory_override(debugger))


def _override(debugger, evaluates):
    """An override of an expression command (``evaluates``) or of a variables command."""

    def override(*argv):
        command = " ".join(argv)
        if _running or (evaluates and not _has_expression(command)) or not shows_history(debugger.GetSelectedTarget()):
            return False
        result = lldbs_own(debugger, command, _running)
        if result.Succeeded():  # a struct's fields LLDB could not read are shown inside the value
            # strings over memory not known: LLDB shows what it could read as the whole string
            target = debugger.GetSelectedTarget()
            shown = _results(target, command, result) if evaluates else shown_variables(target, argv)
            flat = not evaluates and ("-F" in argv or "--flat" in argv)
            output = mark_unproven(target, shown, result.GetOutput(), pointer_depth(argv), flat)
            if output == result.GetOutput() and not _UNREAD_VALUE.search(output):
                return False  # nothing to say: LLDB runs its command again, so that its result holds the output
            _write(debugger.GetOutputFile(), _UNREAD_VALUE.sub(lambda found: _unread(target, found), output))
            return True
        error = result.GetError()
        register = _UNKNOWN_REGISTER.search(error)
        if evaluates and register is not None and register.group(1) in X86_REGISTER_NAMES:
            _write(debugger.GetErrorFile(), f"error: ${register.group(1)} is not known at this position\n")
            return True
        found = _FAILED_READ.search(error)
        unlocated = _UNLOCATED.search(error)  # a variable whose place (its frame base, its register) is not known
        if not evaluates or (found is None and unlocated is None and _UNREAD_RESULT not in error):
            return False  # an error of another kind: LLDB runs its command again, for its status
        target, text = debugger.GetSelectedTarget(), _expression_text(command)
        address = _global_address(target, text) if found is not None else None
        if address is not None:  # LLDB reads a variable's value even to take its address
            _write(debugger.GetOutputFile(), f"({address[1]}) {address[0]:#018x}\n")
        else:
            _write(debugger.GetErrorFile(), f"error: {_unknown_value(target, text, found)}\n")
        return True

    return override


def _results(target, command, result):
    """The values an expression command showed: the variable its text names, or its result."""
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    value = frame.GetValueForVariablePath(_expression_text(command)) if frame.IsValid() else None
    if value is not None and value.IsValid() and value.GetError().Success():
        return [value]  # the variable itself, in memory: a result is a copy, whose fields have no address
    return list(result.GetValues(lldb.eNoDynamicValues))


def _memory_override(debugger):
    def override(*argv):
        target = debugger.GetSelectedTarget()
        if _running or not shows_history(target):
            return False
        arguments, start = list(argv[2:]), _start_argument(argv[2:])
        name_asked_address(_number(arguments[start]) if start is not None else None)
        result = lldbs_own(debugger, _memory_read(arguments), _running)
        replaced = start is not None and _BAD_START in result.GetError()
        address = _global_address(target, arguments[start]) if replaced else None
        if address is not None:  # ``x &queue``: LLDB reads queue's value to take its address
            arguments[start] = f"{address[0]:#x}"
            name_asked_address(address[0])
            result = lldbs_own(debugger, _memory_read(arguments), _running)
        unknown = _writable_shown(target, registry.for_target(target), result.GetOutput())
        if unknown is not None:
            _write(debugger.GetErrorFile(), f"error: {_unknown_memory(target, unknown)}\n")
            return True
        partial = _PARTIAL_READ.search(result.GetOutput() + result.GetError())
        if partial is not None:  # LLDB would show the bytes past the known ones as zeros
            read, start = int(partial.group(1)), int(partial.group(3), 16)
            _write(debugger.GetErrorFile(), f"error: {_unknown_past(target, start, read)}\n")
            return True
        if address is not None:
            _write(debugger.GetOutputFile(), result.GetOutput())
            _write(debugger.GetErrorFile(), result.GetError())
            return True
        return False  # nothing to add: LLDB runs its own command again, so that its result holds the status

    return override


def _memory_read(arguments):
    return " ".join(["memory", "read", *map(quote, arguments)])


def _start_argument(arguments):
    """The index of memory read's start address among its ``arguments`` (after the options), or None."""
    k = 0
    while k < len(arguments):
        argument = arguments[k]
        if argument == "--":
            return k + 1 if k + 1 < len(arguments) else None
        if not argument.startswith("-") or argument == "-":
            return k
        k += 2 if argument in _VALUED_OPTIONS else 1
    return None


def _number(text):
    try:
        return int(text, 0)
    except ValueError:
        return None


def _global_address(target, text):
    """``(address, pointer type name)`` of ``&NAME``, a global variable of the target, else None."""
    named = _ADDRESS_OF.fullmatch(text.strip())
    variable = target.FindFirstGlobalVariable(named.group(1)) if named else None
    if variable is None or not variable.IsValid():
        return None
    for context in target.FindSymbols(named.group(1)):
        address = context.GetSymbol().GetStartAddress().GetLoadAddress(target)
        if address != lldb.LLDB_INVALID_ADDRESS:
            return address, variable.GetType().GetPointerType().GetName()
    return None


def _writable_shown(target, trace, output):
    """The first address memory read's ``output`` shows from a writable section of a module that the process
    does not know there (LLDB then shows the module file's bytes instead), or None."""
    starts = [int(address, 16) for address in _SHOWN_LINE.findall(output)]
    last = output.rstrip("\n").rsplit("\n", 1)[-1]
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) and starts[k + 1] > start else start + _last_line_bytes(last)
        found = trace.module_bytes.first_writable(start, end)
        known = len(known_memory(target, start, end - start)) if found is not None else end - start
        if known < end - start:
            return max(found, start + known)  # the first byte not known
    return None


def _last_line_bytes(line):
    """How many bytes memory read's last ``line`` shows, where its items say (``x/gx`` of a known word beside an
    unknown one was refused); else the most a line shows."""
    words = _HEX_ITEMS.match(line)
    if words is not None:
        return sum((len(word) - 2) // 2 for word in words.group(1).split())
    found = _BYTE_ITEMS.match(line)
    return len(found.group(1).split()) if found is not None else _LINE_BYTES


def _unknown_memory(target, address):
    if address < MAPPED_FROM:
        return f"memory at {address:#x} is not mapped: {NOTHING_MAPPED}"
    return (
        f"memory at {address:#x}{_place(target, address)} is not known at this position: {WHY_UNKNOWN} (the module"
        " file holds only what the program started with)"
    )


def _unknown_past(target, start, read):
    known = f"(the {read} bytes before it, from {start:#x}, are known: ask for {read} bytes or fewer to see them)"
    if unmapped_in(target, start + read):  # past the end of a mapping, at a core
        return f"memory at {start + read:#x} is not mapped: {NOT_MAPPED_AT_CORE} {known}"
    place = _place(target, start + read)
    return f"memory at {start + read:#x}{place} is not known at this position: {WHY_UNKNOWN} {known}"


def _unread(target, found):
    """How a value LLDB could not read shows: not known, or (at a core, through a wild pointer) not mapped."""
    address = _FAILED_READ.search(found.group(0))
    if address is not None and unmapped_in(target, int(address.group(1) or address.group(2), 16)):
        return "<not mapped>"
    return UNKNOWN_VALUE


def _unknown_value(target, text, found):
    needs = ""
    address = int(found.group(1) or found.group(2), 16) if found is not None else _value_address(target, text)
    if address is not None:
        if address < MAPPED_FROM:
            return f"{text or 'the value'} cannot be read: it needs memory at {address:#x}, and {NOTHING_MAPPED}"
        if unmapped_in(target, address):
            return f"{text or 'the value'} cannot be read: it needs memory at {address:#x}, and {NOT_MAPPED_AT_CORE}"
        needs = f" (it needs {address:#x}{_place(target, address)})"
    return f"{text or 'the value'} is not known at this position{needs}: {WHY_UNKNOWN}"


def _value_address(target, text):
    """Where the value of expression ``text`` lies, when LLDB can take its address (``&(head->next->val)``: the
    pointers on the way known), else None."""
    if not text:
        return None
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    value = frame.EvaluateExpression(f"&({text})") if frame.IsValid() else None
    return value.GetValueAsUnsigned() if value is not None and value.GetError().Success() else None


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
