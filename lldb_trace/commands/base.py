"""What every ``pt`` command shares: native option parsing, help, and one-line errors.

Commands derive from LLDB's ParsedCommand (``command script add -p``), so
LLDB parses their options, prints their help and completes their arguments.
A LldbTraceError becomes ``result.SetError``, which makes ``lldb -b`` fail; any
other exception is reported as an internal error instead of a Python trace.
"""

import lldb
from lldb.plugins.parsed_cmd import ParsedCommand

from ..errors import LldbTraceError


def argument_strings(args):
    """The command's arguments as str: a list on LLDB >= 20, SBStructuredData on 19."""
    if isinstance(args, lldb.SBStructuredData):
        return [args.GetItemAtIndex(i).GetStringValue(4096) for i in range(args.GetSize())]
    return [str(arg) for arg in args]


class TraceCommand(ParsedCommand):
    """Base of the ``pt`` commands: subclasses set ``name``, ``short_help``, ``long_help`` and ``run``."""

    name = ""
    short_help = ""
    long_help = ""

    def get_short_help(self):
        return self.short_help

    def get_long_help(self):
        return self.long_help

    def __call__(self, debugger, args, exe_ctx, result):
        try:
            self.run(debugger, argument_strings(args), exe_ctx, result)
        except LldbTraceError as error:
            result.SetError(str(error))
        except Exception as error:  # a bug: say so in one line, keep the session alive
            result.SetError(f"internal error in 'pt {self.name}': {type(error).__name__}: {error} (please report it)")

    def run(self, debugger, args, exe_ctx, result):
        raise NotImplementedError


class TidOptionCommand(TraceCommand):
    """A command with a repeatable ``-t TID`` option, gathered into ``self.tids``."""

    def add_tid_option(self, help_text):
        self.get_parser().add_option("t", "tid", help_text, default=None, value_type=lldb.eArgTypeThreadID)
        self.tids = []

    def option_parsing_started(self):
        super().option_parsing_started()
        self.tids = []

    def set_option_value(self, exe_ctx, opt_name, opt_value):
        if opt_name != "tid":
            return super().set_option_value(exe_ctx, opt_name, opt_value)
        try:
            self.tids.append(int(opt_value, 0))
        except ValueError:
            return False
        return True
