"""LLDB's frame commands on a large loaded trace: its threads are decoded whole first, so every frame shows.

A large trace is loaded decoded only at its end (ProcessTrace.prepare): its
threads stand where they stopped with frame #0 alone, which is all that
``thread list``, ``frame variable`` or ``source list`` need.  Before LLDB's
own ``thread backtrace`` (``bt``) and ``frame select`` (``up``, ``down``,
``f N``) run, these overrides decode the threads they show, build their call
forests (with progress; Ctrl-C stops it, and the command) and make LLDB read
the frames again.  Then LLDB's command runs as usual.
"""

import lldb

from .. import progress
from ..debugger import histories, history_view
from ..debugger.progress_reporter import LldbReporter
from ..errors import LldbTraceError

OVERRIDDEN = ("thread backtrace", "frame select")
_VALUED = {"-c", "--count", "-s", "--start", "-e", "--extended"}  # thread backtrace's options that take a value


def install(debugger):
    interpreter = debugger.GetCommandInterpreter()
    for command in OVERRIDDEN:
        interpreter.SetCommandOverrideCallback(command, _override(debugger, command))


def _override(debugger, command):
    words = len(command.split())

    def override(*argv):
        every_thread = command == "thread backtrace" and _names_threads(argv[words:])
        try:
            with progress.reporting(LldbReporter(debugger)):
                decode_frames(debugger, every_thread)
        except LldbTraceError as error:
            output = debugger.GetErrorFile()
            output.Write(f"error: {error}\n".encode())
            output.Flush()
            return True  # LLDB's command would show frame #0 alone, as if it were all
        return False  # LLDB's own command runs, on the frames now known

    return override


def _names_threads(arguments):
    """Whether ``thread backtrace`` is given threads (``all``, or indexes) rather than the selected one."""
    arguments = iter(arguments)
    for argument in arguments:
        if argument in _VALUED:
            next(arguments, None)
        elif not argument.startswith("-"):
            return True
    return False


def decode_frames(debugger, every_thread=False):
    """Decode the selected thread (or every thread) of a loaded large trace whole, and show its frames."""
    target = debugger.GetSelectedTarget()
    if not histories.shows_history(target):
        return
    trace = histories.trace_of(target)
    process = target.GetProcess()
    if process.GetState() != lldb.eStateStopped:
        return
    threads = list(process) if every_thread else [process.GetSelectedThread()]
    tids = [thread.GetThreadID() for thread in threads if thread.IsValid()]
    pending = [tid for tid in tids if trace.has_trace(tid) and trace.decoded_if_done(tid) is None]
    for tid in pending:
        if trace.decoded(tid).instruction_count:
            trace.call_forest(tid)
    if pending:
        selected = process.GetSelectedThread().GetThreadID()
        history_view.refresh(debugger, target)
        process.SetSelectedThread(process.GetThreadByID(selected))
