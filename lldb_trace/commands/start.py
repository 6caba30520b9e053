"""``pt start`` / ``pt stop``: trace a live process (LLDB reserves ``trace start`` and ``process trace start``).

With the software backend, ``continue``, ``next``, ``step`` and ``finish`` on a
traced process run recorded (see debugger/recording_plan.py).  The overrides
installed here also move a trace's threads through history
(history_stepping.py), and hand every other process to LLDB's own commands
untouched.
"""

import lldb

from .. import progress
from ..capture.intel_pt import pmu as intel_pt_pmu
from ..debugger import live_session, live_values, recording_plan, registry
from ..debugger.histories import live_of
from ..debugger.progress_reporter import LldbReporter
from ..errors import LldbTraceError
from . import history_stepping
from .base import TidOptionCommand, TraceCommand, help_paragraphs

BACKENDS = (
    ("auto", "Intel PT where the CPU and permissions allow it, else the software recorder."),
    ("intel-pt", "The CPU's Intel PT, through perf_event_open."),
    ("software", "The software recorder (any x86-64 CPU): continue/next/step/finish record the thread."),
)


class StartCommand(TidOptionCommand):
    name = "start"
    short_help = "Record the selected process's control flow (Intel PT, or the software recorder on any CPU)."
    long_help = help_paragraphs(
        "Stop the process first (at a breakpoint), then 'pt start', then run on: at every stop, 'trace dump"
        " --instructions' and 'trace dump --function-calls' show what the traced threads ran, and 'trace save DIR'"
        " writes it as a bundle. 'pt stop' ends the recording; the trace stays readable and savable until the"
        " process runs on. (LLDB keeps 'trace start' and 'process trace start' for its own plug-ins, so this"
        " command is 'pt start'.)",
        "--backend intel-pt (or 'pt start intel-pt'): the CPU's Intel PT through perf_event_open, user space only,"
        " one event per thread: the selected thread, each -t TID, or with --all every thread (threads created"
        " later from the next stop on). -b KB sets each thread's buffer (a power of two, default 64 KiB), kept as"
        " a circular snapshot and read at every stop. --psb-period N sets the PMU's psb_period field.",
        "--backend software: any x86-64 CPU. continue, next, step and finish on the selected thread run"
        " recorded: an emulator predicts each stretch of the thread's path, the real thread runs it, and the"
        " stretch is recorded only if its registers then are the predicted ones (otherwise the trace shows a"
        " gap). It records one thread; the others run untraced. -b KB keeps only the newest KB KiB; --psb-period N"
        " writes a PSB every N bytes.",
        "--backend auto (the default): Intel PT where the CPU has it and kernel.perf_event_paranoid allows it,"
        " else the software recorder, saying why. --tsc adds timestamps with either backend.",
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        self.add_tid_option("A thread to trace (repeat for several; default: the selected thread).")
        parser.add_option("a", "all", "Trace every thread (intel-pt).", default=None)
        self.add_number_option("b", "buffer-size", "Trace buffer size in KiB, a power of two.",
                               lldb.eArgTypeUnsignedInteger, default=0, dest="buffer_kb")  # fmt: skip
        parser.add_option("T", "tsc", "Record timestamps.", default=None)
        self.add_number_option("p", "psb-period", "Bytes between PSB packets (software) or the PMU's psb_period.",
                               lldb.eArgTypeUnsignedInteger, default=0, dest="psb_period")  # fmt: skip
        self.add_choice_option("B", "backend", "What records the trace.", BACKENDS, default="auto")
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypePlugin, repeat="optional")])

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if args and args != ["intel-pt"]:
            raise LldbTraceError(f"unknown trace technology '{args[0]}': the only one is intel-pt")
        backend = parser.backend if parser.was_set("backend") else ("intel-pt" if args else "auto")
        target = debugger.GetSelectedTarget()
        process = target.GetProcess()
        if not process.IsValid() or not process.is_alive:
            raise LldbTraceError("no live process: launch or attach one, stop it, then 'pt start'")
        if process.GetPluginName() == "ScriptedProcess" and live_of(target) is not None:
            raise LldbTraceError("this is the process's past: 'pt goto end' first, then 'pt start' records from there")
        if process.GetPluginName() == "ScriptedProcess":
            raise LldbTraceError("this target is a loaded trace, not a live process: 'pt start' needs a running one")
        tids = _tids(process, self.tids, parser.was_set("all"))
        buffer_kb = _buffer_kb(parser.buffer_kb) if parser.was_set("buffer-size") else 0  # 0: the default
        chosen, why_not = _choose_backend(backend)
        if chosen == "software" and parser.was_set("all"):
            raise LldbTraceError(
                "--all traces every thread, later ones too, which only --backend intel-pt does"
                + (f" ({why_not})" if why_not else "")
                + ": the software recorder follows the one thread it steps; drop --all (-t TID picks that thread)"
            )
        start_core = live_values.save_start_state(process) if not buffer_kb else None
        try:
            if chosen == "intel-pt":
                session = live_session.start_intel_pt(
                    target, tids, buffer_kb, parser.was_set("tsc"), parser.psb_period or None, parser.was_set("all")
                )
                what = "Intel PT (perf_event_open)"
            else:
                session = live_session.start_software(target, tids, buffer_kb, parser.was_set("tsc"), parser.psb_period)
                what = "the software recorder" + (f" ({why_not})" if why_not else "")
        except BaseException:
            live_values.release_start_state(start_core)  # nothing started: no trace will read it
            raise
        live_values.keep_known_states(session, start_core)
        threads = ", ".join(map(str, session.tids))
        result.AppendMessage(f"Tracing thread(s) {threads} of process {process.GetProcessID()} with {what}.")
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class StopCommand(TraceCommand):
    name = "stop"
    short_help = "Stop recording the selected process (its trace stays readable until it runs on)."
    long_help = help_paragraphs(
        "Ends the recording that 'pt start' began on the selected process. What was recorded stays readable"
        " ('trace dump') and savable ('trace save') while the process stays stopped; once it runs on, untraced,"
        " the trace no longer describes it and is dropped ('trace dump' then says so)."
    )

    def setup_command_definition(self):
        pass

    def run(self, debugger, args, exe_ctx, result):
        target = debugger.GetSelectedTarget()
        target = live_of(target) or target  # at a past position: the process its history view shows
        session = live_session.session_for(target)
        if session is None:
            if registry.for_target(target) is not None and target.GetProcess().GetPluginName() != "ScriptedProcess":
                raise LldbTraceError("recording already stopped: the trace stays readable until the process runs on")
            raise LldbTraceError("the selected process is not traced ('pt start' traces it)")
        session.stop()
        result.AppendMessage(
            f"Stopped tracing process {session.trace.pid}: 'trace dump' and 'trace save' read its trace until it"
            " runs on."
        )
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def _tids(process, tids, all_threads):
    known = {thread.GetThreadID() for thread in process}
    if all_threads:
        return sorted(known)
    for tid in tids:
        if tid not in known:
            raise LldbTraceError(f"process {process.GetProcessID()} has no thread {tid}")
    return list(dict.fromkeys(tids)) or [process.GetSelectedThread().GetThreadID()]


def _buffer_kb(kb):
    if kb < 4 or kb & (kb - 1):
        raise LldbTraceError(f"-b {kb}: the buffer size must be a power of two of at least 4 KiB")
    return kb


def _choose_backend(backend):
    """``(backend, why Intel PT is not used)``; auto means Intel PT where the CPU and permissions allow it."""
    if backend != "auto":
        return backend, None  # an explicit intel-pt is checked when its events open
    try:
        intel_pt_pmu.check_available()
    except LldbTraceError as error:
        return "software", str(error).split(":")[0].split(" (")[0]  # "this CPU has no Intel PT": the gist
    return "intel-pt", None


def install_stepping_overrides(debugger):
    """LLDB's stepping commands: through history on a trace (history_stepping.py), recorded on a process traced
    by the software backend, LLDB's own everywhere else."""
    interpreter = debugger.GetCommandInterpreter()
    for command in history_stepping.MOVES:
        interpreter.SetCommandOverrideCallback(command, _stepping(debugger, recording_plan.MODES.get(command)))


def _stepping(debugger, mode):
    def override(*argv):
        output = debugger.GetOutputFile()
        try:
            with progress.reporting(LldbReporter(debugger)):
                text = _moved_or_recorded(debugger, argv, mode)
        except LldbTraceError as error:
            text, output = f"error: {error}\n", debugger.GetErrorFile()
        if text is None:
            return False  # not ours: LLDB's own command runs
        output.Write(text.encode())
        output.Flush()
        return True

    return override


def _moved_or_recorded(debugger, argv, mode):
    """What the command printed, moving through history or running recorded; None when neither applies."""
    moved = history_stepping.run(debugger, argv)
    if moved is not None:
        return moved + "\n"
    session = live_session.session_for(debugger.GetSelectedTarget())
    if mode is None or session is None or not session.backend.drives_stepping:
        return None
    return recording_plan.run_recorded(debugger, session, mode)
