"""``pt script FILE.py``: a user's subscriber module, run over the selected thread's history inside LLDB.

The file is loaded as a fresh module each time (edit, rerun).  A module with
``run(thread, args)`` gets the api.ThreadTrace and does what it likes; any
other module is a subscriber: its ``on_call``/``on_return``/``on_gap``/
``on_instruction`` and ``FUNCTIONS``/``MODULES`` go to ``thread.walk``, then
``finish()`` says what it found.  What the script prints is the command's
output; an exception in it is one error line naming the script's line, and
LLDB goes on.
"""

import contextlib
import importlib.util
import io
import sys
import traceback
from pathlib import Path

import lldb

from ..api import ThreadTrace
from ..debugger.symbolizer import LldbSymbolizer, disassembly_flavor
from ..errors import LldbTraceError
from ..option_table import RANGE, TID
from ..progress import WorkInterruptedError
from .base import TidOptionCommand, help_paragraphs
from .selection import chosen_tids, selected_trace

CALLBACKS = ("on_call", "on_return", "on_gap", "on_instruction")


class ScriptError(LldbTraceError):
    """A script that cannot be loaded, defines nothing to run, or raised."""


class ScriptCommand(TidOptionCommand):
    name = "script"
    short_help = "Run a Python subscriber script over the selected thread's history (calls, returns, instructions)."
    long_help = help_paragraphs(
        "Usage: pt script FILE.py [-t TID] [--range FROM:TO] [-- ARGS...]",
        "Loads FILE.py as a module (afresh each time) with ARGS as its ARGS list. If it defines run(thread, args),"
        " that is called with the thread's lldb_trace.api.ThreadTrace. Otherwise its on_call, on_return, on_gap"
        " and on_instruction functions are called with each event of the history in trace order (event.kind,"
        " .index, .time, .depth, .function, .address; .call for calls and returns), only for the functions named"
        " in its FUNCTIONS list and the modules in its MODULES list when it has them (names as 'fib' or"
        " 'module`fib', globs allowed): the events they leave out cost nothing. A callback returning False, or"
        " raising lldb_trace.subscribe.StopWalk, ends the walk. Then its finish() is called, and what it returns"
        " is printed (without a finish(), what the walk delivered).",
        "--range FROM:TO walks items FROM to TO only (either side may be left out, negative counts from the end)."
        " What the script prints is the command's output; an exception in it is reported as one line with the"
        " script's file and line. Ctrl-C stops the walk.",
    )

    options = (TID.with_help("The thread to walk (default: the selected thread)."), RANGE)
    arguments = ("Filename", "plus")

    def run(self, debugger, args, exe_ctx, result):
        if not args:
            raise ScriptError("give the script to run: pt script FILE.py [-- ARGS...]")
        if len(self.tids) > 1:
            raise ScriptError("pt script walks one thread: give -t once")
        path = Path(args[0]).expanduser().resolve()
        target, process_trace = selected_trace(debugger, exe_ctx)
        [tid] = chosen_tids(process_trace, target, self.tids)
        symbolizer = LldbSymbolizer(target, process_trace.module_bytes, disassembly_flavor(debugger))
        thread = ThreadTrace(process_trace, tid, symbolizer)
        item_range = self.get_parser().range if self.get_parser().was_set("range") else None
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                returned = run_script(path, thread, args[1:], item_range)
        finally:
            if printed.getvalue():
                result.AppendMessage(printed.getvalue().rstrip("\n"))
        if returned is not None:
            result.AppendMessage(returned)
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def run_script(path, thread, args, item_range=None):
    """Run the script at ``path`` over ``thread``; what its run() or finish() returned as text (without a
    finish(), what the walk delivered), or None."""
    name = f"pt_script_{path.stem}"
    try:
        return _run(_load(path, name, args), path, thread, args, item_range)
    except (ScriptError, WorkInterruptedError):
        raise
    except Exception as error:
        raise ScriptError(_where(error, path)) from error
    finally:
        sys.modules.pop(name, None)


def _run(module, path, thread, args, item_range):
    run = getattr(module, "run", None)
    if run is not None:
        returned = run(thread, list(args))
        return None if returned is None else str(returned)
    callbacks = {name: getattr(module, name, None) for name in CALLBACKS}
    if not any(callbacks.values()):
        raise ScriptError(f"{path.name} defines neither run(thread, args) nor any of {', '.join(CALLBACKS)}")
    functions, modules = getattr(module, "FUNCTIONS", None), getattr(module, "MODULES", None)
    summary = thread.walk(**callbacks, functions=functions, modules=modules, range=item_range)
    finish = getattr(module, "finish", None)
    if finish is None:
        return str(summary)
    returned = finish()
    return None if returned is None else str(returned)


def _load(path, name, args):
    """The script as a new module, ``ARGS`` set before its body runs; in sys.modules while it runs (dataclasses
    and pickle look for a class's module there)."""
    if not path.is_file():
        raise ScriptError(f"no script at {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ScriptError(f"{path} is not a Python file (give FILE.py)")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    module.ARGS = list(args)
    spec.loader.exec_module(module)
    return module


def _where(error, path):
    """``script.py:LINE: Type: message`` (one line), at the script's innermost line in the traceback."""
    if isinstance(error, SyntaxError):
        text = f"SyntaxError: {error.msg}"
    else:
        text = str(error) if isinstance(error, LldbTraceError) else f"{type(error).__name__}: {error}"
    line = error.lineno if isinstance(error, SyntaxError) and error.filename == str(path) else None
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename) == path:
            line = frame.lineno
    text = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"{path.name}:{line}: {text}" if line else f"{path.name}: {text}"
