"""What a dump shows and how: the options ``pt dump`` and ``lldb-trace dump`` share, with one meaning.

A dump shows one of four things, chosen by its mode options: the session info
(no mode option), ``--instructions``, ``--only-events`` or
``--function-calls``.  An option meant for another dump is an error that
names the dump it is for, so that none is accepted and then ignored.  The
options themselves, with the dumps each applies to, are declared once in
option_table.py, where both commands' parsers are built from.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import LldbTraceError
from ..option_table import CALLS, DUMP_OPTIONS, EVENTS, INFO, INSTRUCTIONS

_NAMES = {
    INFO: "the session info",
    INSTRUCTIONS: "--instructions",
    EVENTS: "--only-events",
    CALLS: "--function-calls",
}


class DumpOptionError(LldbTraceError):
    """Options that ask for two dumps, or for something the chosen dump does not do."""


@dataclass(frozen=True)
class DumpOptions:
    """One dump's options (as LLDB's TraceDumperOptions): the window, and what each shown item, event or call says."""

    mode: str = INFO
    count: int | None = 10  # items, events or calls to show; None: every one (--all)
    offset: int = 0
    id: int | None = None  # the item the window starts at (--id)
    forwards: bool = False
    time: bool = False
    raw: bool = False
    kind: bool = False
    events: bool = False
    flat: bool = False
    newest_first: bool = False
    module: str | None = None  # a glob on the module's file name
    function: str | None = None  # a glob on the function's name (or the name of the stub it was called through)
    json: bool = False
    verbose: bool = False
    continuing: bool = False  # --continue: an empty window says "no more"

    @property
    def shown_name(self) -> str:
        """What this dump shows is called in text ("(no items)")."""
        return {INSTRUCTIONS: "items", EVENTS: "events", CALLS: "calls"}[self.mode]


# The flags that DumpOptions keeps as they are (--forwards, --json...), as opposed to those choosing the dump.
_SHOWN = tuple(
    option for option in DUMP_OPTIONS if not option.takes_value and option.dest in DumpOptions.__annotations__
)


def dump_options(given: Mapping[str, Any]) -> DumpOptions:
    """DumpOptions from ``given``: ``{long option: value}`` of the options given (flags: True); raises for misuse."""
    was_set = given.__contains__
    mode = dump_mode(was_set)
    check_options(was_set, mode)
    return DumpOptions(
        mode=mode,
        count=None if "all" in given else given.get("count", 10),
        offset=given.get("offset", 0),
        id=given.get("id"),
        module=given.get("module"),
        function=given.get("function"),
        continuing="continue" in given,
        **{flag.dest: flag.long in given for flag in _SHOWN},
    )


def dump_mode(was_set: Callable[[str], bool]) -> str:
    """The dump the options ask for; ``was_set(long option)`` tells which were given."""
    if was_set("instructions") and was_set("function-calls"):
        raise DumpOptionError("choose one of --instructions and --function-calls")
    if was_set("function-calls"):
        return CALLS
    if was_set("only-events"):
        return EVENTS
    return INSTRUCTIONS if was_set("instructions") else INFO


def check_options(was_set: Callable[[str], bool], mode: str) -> None:
    """Raise for the first option given that does nothing in ``mode``."""
    for option in DUMP_OPTIONS:
        if option.applies_to and was_set(option.long) and mode not in option.applies_to:
            meant = " and ".join(_NAMES[m] for m in option.applies_to)
            raise DumpOptionError(f"--{option.long} does not apply to {_NAMES[mode]}: it is for {meant}")
