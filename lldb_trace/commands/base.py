"""What every ``pt`` command shares: native option parsing, help, and one-line errors.

Commands derive from LLDB's ParsedCommand (``command script add -p``), so
LLDB parses their options, prints their help and completes their arguments.
A command declares its options as a table (option_table.Option), the same
values ``lldb-trace``'s argparse is built from where both take an option.
A LldbTraceError becomes ``result.SetError``, which makes ``lldb -b`` fail; any
other exception is reported as an internal error instead of a Python trace.

Numbers are read here rather than by ParsedCommand, whose converters raise a
Python traceback on ``-c abc`` and know only decimal: they are read as LLDB
reads its own (``0x10``, ``0b101``, ``017`` octal), and a bad one is reported
as one line when the command runs (an option parser can only say "no").

LLDB wraps each line of a long help separately at the terminal's width,
continuing it at that line's own indentation; so a paragraph is one line.
"""

import contextlib
import io

import lldb
from lldb.plugins.parsed_cmd import ParsedCommand

from .. import progress
from ..debugger.progress_reporter import LldbReporter
from ..errors import LldbTraceError
from ..option_table import is_negative_number, parse_number

CONTAINER = "pt"


class OptionValueError(LldbTraceError):
    """An option's value is not one the option takes."""


_NO_ADDRESS = 0xFFFFFFFFFFFFFFFF  # LLDB_INVALID_ADDRESS: a value in a register, or none


def number_error(option, text, least=0):
    if is_negative_number(text):
        return OptionValueError(f"{option} must be {least} or more, not {text}")
    return OptionValueError(f"{option}: '{text}' is not a number (give it in decimal, or in hex as 0x1f)")


def lldbs_own(debugger, command, running):
    """LLDB's own ``command``, run from inside the override that took it over: ``running`` (the override's guard)
    holds the command meanwhile, so the override steps aside. Its SBCommandReturnObject."""
    result = lldb.SBCommandReturnObject()
    running.append(command)
    try:
        debugger.GetCommandInterpreter().HandleCommand(command, result)
    finally:
        running.pop()
    return result


def listed(values):
    """``a, b or c``: the values a choice takes, as errors and help list them."""
    return ", ".join(values[:-1]) + f" or {values[-1]}"


def choice(given, values, what):
    """The value of ``values`` that ``given`` names, exactly or as the start of only one; else a one-line error."""
    if given in values:
        return given
    matches = [value for value in values if value.startswith(given)] if given else []
    if len(matches) == 1:
        return matches[0]
    raise OptionValueError(f"unknown {what} '{given}': choose {listed(values)}")


def argument_strings(args):
    """The command's arguments as str: a list on LLDB >= 20, SBStructuredData on 19 (and on 23)."""
    if isinstance(args, lldb.SBStructuredData):
        return [_argument_string(args.GetItemAtIndex(i)) for i in range(args.GetSize())]
    return [str(arg) for arg in args]


def _argument_string(item):
    """One argument's text; an argument that is not UTF-8 (a file name's stray byte) is a one-line error.

    SWIG cannot turn such bytes into a str (a SystemError); LLDB's JSON of them shows where they are.
    """
    try:
        return item.GetStringValue(4096)
    except (SystemError, UnicodeDecodeError):
        shown = lldb.SBStream()
        item.GetAsJSON(shown)
        raise OptionValueError(
            f"the argument {shown.GetData()} is not UTF-8 text, which LLDB cannot pass to a Python command: "
            "give the file a UTF-8 name, or a symbolic link with one"
        ) from None


def lldb_text(text):
    """``text`` as LLDB can take it: UTF-8 has no lone surrogates, which a bundle's paths may hold (JSON's
    ``"\\udcff"``, a file name's undecodable byte); they are shown escaped (``\\udcff``) instead of failing."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(text, str) else text


class EncodableResult:
    """A command's SBCommandReturnObject whose texts are made encodable (lldb_text) on their way to LLDB.

    SWIG cannot convert a string that UTF-8 cannot encode: the message would be lost in a Python traceback.
    """

    def __init__(self, result):
        self._result = result

    def AppendMessage(self, text):  # noqa: N802 (LLDB's names)
        self._result.AppendMessage(lldb_text(text))

    def AppendWarning(self, text):  # noqa: N802
        self._result.AppendWarning(lldb_text(text))

    def SetError(self, text):  # noqa: N802
        self._result.SetError(lldb_text(text))

    def __getattr__(self, name):
        return getattr(self._result, name)


def help_paragraphs(*paragraphs):
    """A long help from one-line paragraphs, set off from LLDB's option list by a blank line."""
    return "\n" + "\n\n".join(paragraphs)


class TraceCommand(ParsedCommand):
    """Base of the ``pt`` commands: subclasses set ``name``, ``short_help``, ``long_help`` and ``run``.

    A command declares its ``options`` (option_table.Option) and ``arguments``; every command also
    takes ``-h``/``--help``.  Number options hold ints, repeatable ones their values in order
    (:meth:`values`); a bad value fails the command with :class:`OptionValueError` before ``run``.
    """

    name = ""
    short_help = ""
    long_help = ""
    options = ()
    arguments = None  # (LLDB argument type, repeat): ("Filename", "plus") is eArgTypeFilename, one or more

    def __init__(self, debugger, internal_dict):
        self._numbers = {}  # long option -> the least value it takes
        self._choices = {}  # long option -> its values
        self._repeated = {}  # long option -> the values given, for an option that may be given again
        self._option_errors = []
        super().__init__(debugger, internal_dict)  # runs setup_command_definition
        self.get_parser().add_option("h", "help", f"Show this help (as 'help {self.full_name}' does).", default=None)

    @property
    def full_name(self):
        return f"{CONTAINER} {self.name}"

    def get_short_help(self):
        return self.short_help

    def get_long_help(self):
        return self.long_help

    def setup_command_definition(self):
        """LLDB's options and arguments of the command, from its declarations."""
        for option in self.options:
            self.add_declared(option)
        if self.arguments:
            kind, repeat = self.arguments
            parser = self.get_parser()
            parser.add_argument_set([parser.make_argument_element(_argument_type(kind), repeat=repeat)])

    def add_declared(self, option):
        """Add one declared option to LLDB's parser."""
        if option.choices:
            self.add_choice_option(option.short, option.long, option.help, option.choices, option.default)
        elif option.reads == "number":
            self.add_number_option(option.short, option.long, option.help, _argument_type(option.value),
                                   default=option.default, dest=option.dest, least=option.least)  # fmt: skip
        else:
            value_type = _argument_type(option.value) if option.value else None
            self.get_parser().add_option(option.short, option.long, option.help, default=option.default,
                                         value_type=value_type, dest=option.dest)  # fmt: skip
        if option.repeat:
            self._repeated[option.long] = []

    def values(self, long):
        """The values a repeatable option was given, in order."""
        return self._repeated[long]

    def given_options(self):
        """``{long option: value}`` of the declared options given (flags: True), as views/options.py takes them."""
        parser = self.get_parser()
        return {
            option.long: getattr(parser, option.dest) if option.takes_value else True
            for option in self.options
            if parser.was_set(option.long)
        }

    def add_number_option(self, short, long, help_text, value_type, default=None, dest=None, least=0):
        """An option taking a number of ``least`` or more, read as LLDB reads numbers (the command checks the
        range; a negative number is refused here, as LLDB's parser cannot take it)."""
        self.get_parser().add_option(short, long, help_text, default=default, value_type=value_type, dest=dest)
        self._numbers[long] = least

    def add_choice_option(self, short, long, help_text, choices, default):
        """An option taking one of ``choices`` (``(value, help)`` pairs) or a prefix of one; help lists them."""
        with contextlib.redirect_stdout(io.StringIO()):  # add_option prints a note about enum value types
            self.get_parser().add_option(short, long, help_text, default=default, value_type=lldb.eArgTypePlugin,
                                         enum_values=[list(choice) for choice in choices])  # fmt: skip
        self._choices[long] = [value for value, _help in choices]

    def option_parsing_started(self):
        super().option_parsing_started()
        self._option_errors = []
        for values in self._repeated.values():
            values.clear()

    def set_option_value(self, exe_ctx, opt_name, opt_value):
        # A bad value is reported in one line when the command runs, not as LLDB's "Error setting option".
        if opt_name in self._numbers:
            value = parse_number(opt_value)
            if value is None:
                self._option_errors.append(number_error(f"--{opt_name}", opt_value, self._numbers[opt_name]))
                return True
            opt_value = str(value)
        elif opt_name in self._choices:  # stored whole: commands read the full value, never a prefix
            try:
                opt_value = choice(opt_value, self._choices[opt_name], opt_name)
            except OptionValueError as error:
                self._option_errors.append(error)
                return True
        if opt_name in self._repeated:
            self._repeated[opt_name].append(opt_value)
            return True
        return super().set_option_value(exe_ctx, opt_name, opt_value)

    def __call__(self, debugger, args, exe_ctx, result):
        result = EncodableResult(result)
        try:
            if self.get_parser().was_set("help"):
                self.show_help(debugger, result)
                return
            if self._option_errors:
                raise self._option_errors[0]
            with progress.reporting(LldbReporter(debugger)):
                self.run(debugger, argument_strings(args), exe_ctx, result)
        except LldbTraceError as error:
            result.SetError(str(error))
        except Exception as error:  # a bug: say so in one line, keep the debugger going
            result.SetError(f"internal error in '{self.full_name}': {type(error).__name__}: {error} (please report it)")

    def show_help(self, debugger, result):
        """``pt NAME --help``: what ``help pt NAME`` prints."""
        shown = lldb.SBCommandReturnObject()
        debugger.GetCommandInterpreter().HandleCommand(f"help {self.full_name}", shown)
        result.AppendMessage(shown.GetOutput().rstrip())
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)

    def run(self, debugger, args, exe_ctx, result):
        raise NotImplementedError


class TidOptionCommand(TraceCommand):
    """A command with a repeatable ``-t TID`` option, gathered into ``self.tids``."""

    def add_declared(self, option):
        if option.reads == "tid":
            self.add_tid_option(option.help)
        else:
            super().add_declared(option)

    def add_tid_option(self, help_text):
        self.get_parser().add_option("t", "tid", help_text, default=None, value_type=lldb.eArgTypeThreadID)
        self.tids = []

    def option_parsing_started(self):
        super().option_parsing_started()
        self.tids = []

    def set_option_value(self, exe_ctx, opt_name, opt_value):
        if opt_name != "tid":
            return super().set_option_value(exe_ctx, opt_name, opt_value)
        tid = parse_number(opt_value)
        if tid is None:
            error = OptionValueError(f"--tid: '{opt_value}' is not a thread id (a number, as 'thread list' shows tids)")
            self._option_errors.append(error)
        else:
            self.tids.append(tid)
        return True


def _argument_type(name):
    """LLDB's argument type named ``name`` in a declaration: ``"Count"`` is ``lldb.eArgTypeCount``."""
    return getattr(lldb, f"eArgType{name}")


def address_of(target, text):
    """An address given as a number, or as an expression evaluated in the selected frame (``&ada.course``); a
    variable's address is taken without its value, which may not be known at a past position."""
    number = parse_number(text)
    if number is not None:
        return number
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    variable = variable_in_memory(target, text[1:].strip()) if text.startswith("&") else None
    if variable is not None:
        return variable[0]
    value = frame.EvaluateExpression(text) if frame.IsValid() else target.EvaluateExpression(text)
    if not value.GetError().Success():
        raise LldbTraceError(f"'{text}' is no address: {_first_error(value.GetError().GetCString())}")
    return value.GetValueAsUnsigned()


def variable_in_memory(target, path):
    """``(address, size, declaration SBDeclaration or None)`` of variable ``path`` (``x``, ``ada.course``) in the
    selected frame, or else a global one, where it is in memory; None elsewhere.  Its address needs no value: a
    global's comes from its symbol where LLDB, which reads the value first, cannot say it (not known here)."""
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    local = frame.GetValueForVariablePath(path) if frame.IsValid() else None
    for value in (local, target.FindFirstGlobalVariable(path)):
        if value is not None and value.IsValid() and value.GetLoadAddress() != _NO_ADDRESS:
            return value.GetLoadAddress(), value.GetByteSize(), value.GetDeclaration()
    symbols = [found.GetSymbol() for found in target.FindSymbols(path)]
    data = [symbol for symbol in symbols if symbol.GetType() == lldb.eSymbolTypeData]
    if len(data) == 1 and local is not None and local.IsValid():  # a global LLDB knows, whose bytes are unknown
        return data[0].GetStartAddress().GetLoadAddress(target), local.GetByteSize(), local.GetDeclaration()
    return None


def _first_error(text):
    """The compiler's error in what LLDB says of an expression, on one line (not its note on the language, nor the
    source line and caret under it)."""
    errors = [line.split(": ", 3)[-1] if line.startswith("error: <user expression") else line.removeprefix("error: ")
              for line in (text or "").splitlines() if line.startswith("error: ")]  # fmt: skip
    found = [error for error in errors if not error.startswith("Expression evaluation in pure C")]
    return (found or errors or [(text or "not an expression LLDB can evaluate").strip()])[0]
