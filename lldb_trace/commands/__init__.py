"""LLDB commands: the only layer (with debugger/) that imports ``lldb``.

Each command family lives in its own module and is registered under the
``pt`` container by :func:`register`, which also routes LLDB's built-in
``trace`` commands to them (see routing.py).
"""

import sys

import lldb

from ..debugger.interpreter import run_command
from . import frames_on_demand, history_watchpoints, process_kill, register_read, routing, unknown_values
from .base import CONTAINER
from .dump import DumpCommand
from .export import ExportCommand
from .find import FindCommand
from .history import COMMANDS as HISTORY_COMMANDS
from .load import LoadCommand
from .profile import ProfileCommand
from .save import SaveCommand
from .schema import SchemaCommand
from .script import ScriptCommand
from .start import StartCommand, StopCommand, install_stepping_overrides

CONTAINER_HELP = (
    "Intel Processor Trace (lldb_trace): load, record, inspect and save control-flow traces; start with"
    " 'help pt load' or 'help pt start'."
)
COMMANDS = (
    LoadCommand, SchemaCommand, DumpCommand, SaveCommand, StartCommand, StopCommand, FindCommand, ExportCommand,
    ScriptCommand, ProfileCommand, *HISTORY_COMMANDS,
)  # fmt: skip


def register(debugger):
    """Create (or re-create, on a repeated import) the ``pt`` commands and the routes to them."""
    run_command(debugger, f'command container add -o -h "{CONTAINER_HELP}" {CONTAINER}')
    for command in COMMANDS:
        class_name = f"{command.__module__}.{command.__name__}"
        parsed = "" if getattr(command, "raw", False) else "-p "
        run_command(debugger, f"command script add -o {parsed}-c {class_name} {CONTAINER} {command.name}")
    routed = routing.install(debugger, {f"{CONTAINER} {command.name}" for command in COMMANDS})
    install_stepping_overrides(debugger)
    register_read.install(debugger)
    frames_on_demand.install(debugger)
    unknown_values.install(debugger)
    history_watchpoints.install(debugger)
    process_kill.install(debugger)
    # The live recorder reads about 40 registers at every stop it predicts from: one 'g' packet
    # instead of a 'p' packet per register (3.9 ms -> 1.2 ms).  It applies to processes launched
    # or attached from now on; older LLDBs without the setting just keep 'p' packets.
    debugger.GetCommandInterpreter().HandleCommand(
        "settings set plugin.process.gdb-remote.use-g-packet-for-reading true", lldb.SBCommandReturnObject()
    )
    if routed:
        _say(
            debugger,
            f"lldb_trace: {_grouped(routed)} run the 'pt' commands ({routing.DISABLE_VARIABLE}=1 turns this off)",
        )


def _grouped(names):
    """``trace load|schema, thread trace dump info``: routed commands grouped by their common prefix."""
    groups = {}
    for name in names:
        prefix, _, last = name.rpartition(" ")
        groups.setdefault(prefix, []).append(last)
    return ", ".join(f"{prefix} {'|'.join(lasts)}" for prefix, lasts in groups.items())


def _say(debugger, line):
    """One line on the debugger's own output (where its command output goes)."""
    output = debugger.GetOutputFile()
    if output.IsValid():
        output.Write(f"{line}\n".encode())
        output.Flush()
    else:
        print(line, file=sys.stdout)
