"""Command options declared once: what an option is, and the options several commands share.

A command lists its options as :class:`Option` values.  ``commands/base.py``
builds LLDB's parsed-command options (and so ``help pt NAME``) from them;
:func:`add_arguments` builds ``lldb-trace``'s argparse arguments from the same
values, so an option that both take (``pt dump`` and ``lldb-trace dump``) has
one name, flag, value, default and help.  No LLDB here: cli.py imports it.
"""

import argparse
import re
from dataclasses import dataclass, replace

_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO]?[0-7]+|[1-9][0-9]*|0")


@dataclass(frozen=True)
class Option:
    """One option of a command.  ``value`` is None for a flag, else LLDB's argument type of the value
    (``"Count"`` is ``lldb.eArgTypeCount``), whose name both helps show (``<count>``, ``COUNT``)."""

    short: str  # "" for none
    long: str
    help: str
    value: str | None = None
    reads: str = "text"  # how the value is read: text, number (0 or more, as LLDB reads numbers) or tid
    choices: tuple = ()  # (value, help) pairs: the value is one of them (or, in LLDB, a prefix of only one)
    default: object = None
    repeat: bool = False  # it may be given again, each value kept in order
    applies_to: tuple = ()  # the dumps it does something in (views/options.py); empty: every dump
    lldb_only: bool = False  # lldb-trace has no such option: it is about the debugger (Enter, --file)
    least: int = 0  # the least number a "number" option takes (its command checks the range)

    @property
    def takes_value(self):
        return self.value is not None or bool(self.choices)

    @property
    def dest(self):
        """The attribute that holds the value, on LLDB's parser and on argparse's namespace."""
        return self.long.replace("-", "_")

    def with_help(self, text):
        """This option as another command explains it."""
        return replace(self, help=text)


TID = Option("t", "tid", "A thread (repeat for several).", value="ThreadID", reads="tid", repeat=True)
RANGE = Option("r", "range", "Only items FROM:TO (e.g. 1000:2000, -5000:).", value="Value")
SEARCH_PATH = Option(
    "s", "search-path", "A perf.data's binaries may be in this folder (repeatable).", value="DirectoryName", repeat=True
)
SYSROOT = Option(
    "r", "sysroot", "A perf.data's binaries may be at their paths under this root (repeatable).",
    value="DirectoryName", repeat=True,
)  # fmt: skip
CORE = Option(
    "c", "core", "A core file of the traced process where its trace ends (for a perf.data, or to replace a bundle's"
    " coreFile); checked against the trace.", value="Filename",
)  # fmt: skip
WORKERS = Option(  # read by decode/workers.py, whose error names a bad count
    "", "workers", "Decode a large trace with this many processes (default: LLDB_TRACE_WORKERS, else every core).",
    value="Count",
)  # fmt: skip
BUNDLE_FORMATS = (("json", "a trace bundle (default)"), ("perf", "a perf.data file"))  # what 'pt save' writes

# The dumps (pt dump, lldb-trace dump); what each shows, and what its options mean, is views/options.py's.
INFO, INSTRUCTIONS, EVENTS, CALLS = "info", "instructions", "events", "function-calls"
_WINDOWS = (INSTRUCTIONS, EVENTS, CALLS)
_ITEMS = (INSTRUCTIONS, EVENTS)
_CALLS_ONLY, _INSTRUCTIONS_ONLY = (CALLS,), (INSTRUCTIONS,)

# Every option of a dump, in the order misuse is checked (the first given that does nothing in the chosen dump
# is named); applies_to: the dumps it does something in (else every dump).
DUMP_OPTIONS = (
    Option("i", "instructions", "Dump the last instructions of each thread.", applies_to=_ITEMS),
    Option("E", "only-events", "Dump only the trace's events, no instructions.", applies_to=(EVENTS,)),
    Option("C", "function-calls", "Dump the call tree of each thread."),
    Option("c", "count", "How many items, events or calls to show (default 10).", "Count", "number",
           applies_to=_WINDOWS),
    Option("o", "offset", "Skip this many items, events or calls first (default 0).", "Offset", "number",
           applies_to=_WINDOWS),
    Option("a", "all", "Show every item, event or call (instead of --count).", applies_to=_WINDOWS),
    Option("k", "continue", "Continue where the previous dump of the thread stopped (what Enter does).",
           applies_to=_WINDOWS, lldb_only=True),
    Option("I", "id", "Start at this item index (then --offset counts from there).", "Index", "number",
           applies_to=_WINDOWS),
    Option("f", "forwards", "Oldest first, counting --offset from the beginning.", applies_to=_WINDOWS),
    Option("T", "time", "Show timestamps (wall-clock ns with tscPerfZeroConversion, else the TSC).",
           applies_to=_ITEMS),
    Option("e", "events", "Show the trace's events between the items.", applies_to=_ITEMS),
    Option("r", "raw", "Addresses only: no symbols or disassembly.", applies_to=_INSTRUCTIONS_ONLY),
    Option("K", "kind", "Show each instruction's control-flow kind (call, return, jump, far call...).",
           applies_to=_INSTRUCTIONS_ONLY),
    Option("l", "flat", "With --function-calls: one call per line, no hierarchy.", applies_to=_CALLS_ONLY),
    Option("N", "newest-first", "With --function-calls: newest call first (children above their callers).",
           applies_to=_CALLS_ONLY),
    Option("m", "module", "With --function-calls: only calls of functions in modules matching this glob (the file"
           " name: 'libc.so*').", "ShlibName", applies_to=_CALLS_ONLY),
    Option("n", "function", "With --function-calls: only calls of functions whose name (or whose PLT stub's)"
           " matches this glob ('str*').", "FunctionName", applies_to=_CALLS_ONLY),
    Option("j", "json", "Print JSON instead of text."),
    Option("v", "verbose", "Session info: also print the bundle file.", applies_to=(INFO,)),
    Option("F", "file", "Write the dump to this file.", "Filename", lldb_only=True),
    TID.with_help("A thread to dump (repeat for several; default: the selected thread)."),
)  # fmt: skip


def parse_number(text):
    """``text`` as LLDB reads a number (decimal, 0x hex, 0b binary, 0o or leading-0 octal); None if it is none."""
    if not _NUMBER.fullmatch(text):
        return None
    prefix = text[:2].lower()
    if prefix in ("0x", "0b", "0o"):
        return int(text[2:], {"0x": 16, "0b": 2, "0o": 8}[prefix])
    return int(text, 8 if text.startswith("0") else 10)


def is_negative_number(text):
    return text.startswith("-") and parse_number(text[1:]) is not None


def add_arguments(parser, options):
    """Add ``options`` (but the LLDB-only ones) to an argparse ``parser``, with the metavar LLDB's help shows."""
    for option in options:
        if option.lldb_only:
            continue
        flags = [f"-{option.short}"] * bool(option.short) + [f"--{option.long}"]
        if not option.takes_value:
            parser.add_argument(*flags, action="store_true", help=option.help)
            continue
        if option.choices:
            shown = {"choices": [value for value, _help in option.choices]}
        else:
            shown = {"metavar": _metavar(option), "type": str if option.reads == "text" else _number}
        action = "append" if option.repeat else "store"
        parser.add_argument(*flags, action=action, default=option.default, help=option.help, **shown)


def given_arguments(args, options):
    """``{long option: value}`` of the ``options`` given on the command line (flags: True)."""
    values = {option.long: getattr(args, option.dest, None) for option in options if not option.lldb_only}
    return {long: value for long, value in values.items() if value is not None and value is not False}


def _metavar(option):
    """``ThreadID`` -> ``THREAD-ID``: the value's name as LLDB's help shows it (``<thread-id>``), in capitals."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "-", option.value).upper()


def _number(text):
    """A number of 0 or more, read as ``pt`` commands read it, for argparse."""
    value = parse_number(text)
    if value is None:
        if is_negative_number(text):
            raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
        raise argparse.ArgumentTypeError(f"not a number (give it in decimal, or in hex as 0x1f): {text}")
    return value
