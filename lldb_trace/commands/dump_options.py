"""Which ``pt dump`` options go with which dump, so that none is accepted and then ignored.

``pt dump`` shows one of four things, chosen by its mode options: the session
info (no mode option), ``--instructions``, ``--only-events`` or
``--function-calls``.  An option meant for another dump is an error that
names the dump it is for.
"""

from .base import OptionValueError

INFO, INSTRUCTIONS, EVENTS, CALLS = "info", "instructions", "events", "function-calls"
_NAMES = {
    INFO: "the session info",
    INSTRUCTIONS: "--instructions",
    EVENTS: "--only-events",
    CALLS: "--function-calls",
}
_WINDOWS = (INSTRUCTIONS, EVENTS, CALLS)

# option -> the dumps it applies to.  An option not listed here (--json, --file, --tid) applies to all.
APPLIES_TO = {
    "instructions": (INSTRUCTIONS, EVENTS),
    "only-events": (EVENTS,),
    "count": _WINDOWS,
    "offset": _WINDOWS,
    "all": _WINDOWS,
    "continue": _WINDOWS,
    "id": _WINDOWS,
    "forwards": _WINDOWS,
    "time": (INSTRUCTIONS, EVENTS),
    "events": (INSTRUCTIONS, EVENTS),
    "raw": (INSTRUCTIONS,),
    "kind": (INSTRUCTIONS,),
    "flat": (CALLS,),
    "newest-first": (CALLS,),
    "module": (CALLS,),
    "function": (CALLS,),
    "verbose": (INFO,),
}


def dump_mode(was_set):
    """The dump the options ask for; ``was_set(long option)`` tells which were given."""
    if was_set("instructions") and was_set("function-calls"):
        raise OptionValueError("choose one of --instructions and --function-calls")
    if was_set("function-calls"):
        return CALLS
    if was_set("only-events"):
        return EVENTS
    return INSTRUCTIONS if was_set("instructions") else INFO


def check_options(was_set, mode):
    """Raise for the first option given that does nothing in ``mode``."""
    for option, modes in APPLIES_TO.items():
        if was_set(option) and mode not in modes:
            meant = " and ".join(_NAMES[m] for m in modes)
            raise OptionValueError(f"--{option} does not apply to {_NAMES[mode]}: it is for {meant}")
