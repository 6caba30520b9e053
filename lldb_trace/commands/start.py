"""``pt start`` / ``pt stop``: trace a live process (LLDB reserves ``trace start`` and ``process trace start``).

With the software backend, ``continue``, ``next``, ``step`` and ``finish`` on a
traced process run recorded (see target/live.py); the overrides installed
here hand every other process to LLDB's own commands untouched.
"""

import lldb

from ..capture import intel_pt_backend
from ..errors import LldbTraceError
from ..target import live
from .base import TidOptionCommand, TraceCommand

BACKENDS = ("auto", "intel-pt", "software")


class StartCommand(TidOptionCommand):
    name = "start"
    short_help = "Start tracing the selected process (Intel PT, or the software recorder where the CPU has none)."
    long_help = (
        "pt start [intel-pt] [-t TID ...] [--all] [-b KB] [--tsc] [--psb-period N] [--backend auto|intel-pt|software]\n"
        "traces the selected thread (-t: these threads; --all: every thread). The intel-pt backend uses\n"
        "perf_event_open with the CPU's intel_pt PMU; the software backend records through LLDB's own\n"
        "stepping (an emulator predicts stretches the real thread then runs, checked by its registers) and\n"
        "works on any x86-64 CPU: after 'pt start --backend software', continue/next/step/finish record\n"
        "the selected thread's control flow until the next stop (other threads run untraced). -b bounds\n"
        "the trace buffer in KiB (a power of two; the newest data is kept). 'trace dump --instructions'\n"
        "and '--function-calls' then show the trace at every stop; 'pt stop' ends tracing."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        self.add_tid_option("A thread to trace (repeat for several).")
        parser.add_option("a", "all", "Trace every thread.", default=None)
        parser.add_option("b", "buffer-size", "Trace buffer size in KiB, a power of two.", default=0,
                          value_type=lldb.eArgTypeUnsignedInteger, dest="buffer_kb")  # fmt: skip
        parser.add_option("T", "tsc", "Record timestamps.", default=None)
        parser.add_option("p", "psb-period", "Bytes between PSB packets (software) or the PMU's psb_period value.",
                          default=0, value_type=lldb.eArgTypeUnsignedInteger, dest="psb_period")  # fmt: skip
        parser.add_option("B", "backend", "auto (default), intel-pt or software.", default="auto",
                          value_type=lldb.eArgTypeNone)  # fmt: skip
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypeNone, repeat="optional")])

    def run(self, debugger, args, exe_ctx, result):
        parser = self.get_parser()
        if args and args != ["intel-pt"]:
            raise LldbTraceError(f"unknown trace technology '{args[0]}': the only one is intel-pt")
        backend = parser.backend if parser.was_set("backend") else ("intel-pt" if args else "auto")
        if backend not in BACKENDS:
            raise LldbTraceError(f"unknown backend '{backend}': choose one of {', '.join(BACKENDS)}")
        target = debugger.GetSelectedTarget()
        process = target.GetProcess()
        if not process.IsValid() or not process.is_alive:
            raise LldbTraceError("no live process: launch or attach one, stop it, then 'pt start'")
        if process.GetPluginName() == "ScriptedProcess":
            raise LldbTraceError("this target is a loaded trace, not a live process: 'pt start' needs a running one")
        tids = _tids(process, self.tids, parser.was_set("all"))
        buffer_kb = _buffer_kb(int(parser.buffer_kb or 0))
        psb_period = int(parser.psb_period or 0)
        chosen, why_not = _choose_backend(backend)
        if chosen == "intel-pt":
            session = live.start_intel_pt(
                target, tids, buffer_kb, parser.was_set("tsc"), psb_period or None, parser.was_set("all")
            )
            what = "Intel PT (perf_event_open)"
        else:
            session = live.start_software(target, tids, buffer_kb, parser.was_set("tsc"), psb_period)
            what = "the software recorder" + (f" ({why_not})" if why_not else "")
        threads = ", ".join(map(str, session.tids))
        result.AppendMessage(f"Tracing thread(s) {threads} of process {process.GetProcessID()} with {what}.")
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class StopCommand(TraceCommand):
    name = "stop"
    short_help = "Stop tracing the selected process (its trace stays readable until it resumes untraced)."
    long_help = "Ends the tracing started by 'pt start' on the selected process."

    def setup_command_definition(self):
        pass

    def run(self, debugger, args, exe_ctx, result):
        session = live.session_for(debugger.GetSelectedTarget())
        if session is None:
            raise LldbTraceError("the selected process is not traced ('pt start' traces it)")
        session.close()
        result.AppendMessage(f"Stopped tracing process {session.trace.pid}.")
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
    if kb and (kb < 4 or kb & (kb - 1)):
        raise LldbTraceError(f"-b {kb}: the buffer size must be a power of two of at least 4 KiB")
    return kb


def _choose_backend(backend):
    """``(backend, why Intel PT is not used)``; auto means Intel PT where the CPU and permissions allow it."""
    if backend != "auto":
        return backend, None  # an explicit intel-pt is checked when its events open
    try:
        intel_pt_backend.check_available()
    except LldbTraceError as error:
        return "software", f"no Intel PT: {str(error).split(':')[0]}"
    return "intel-pt", None


def install_stepping_overrides(debugger):
    """Make continue/next/step/finish record on processes traced by the software backend."""
    interpreter = debugger.GetCommandInterpreter()
    for command, mode in live.MODES.items():
        interpreter.SetCommandOverrideCallback(command, _recorded(debugger, mode))


def _recorded(debugger, mode):
    def override(*_argv):
        session = live.session_for(debugger.GetSelectedTarget())
        if session is None or session.backend.name != "software recorder":
            return False  # not ours: LLDB's own command runs
        try:
            text = live.run_recorded(debugger, session, mode)
        except LldbTraceError as error:
            text = f"error: {error}\n"
        output = debugger.GetOutputFile()
        output.Write(text.encode())
        output.Flush()
        return True

    return override
