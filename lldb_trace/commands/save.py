"""``pt save PATH`` (and ``trace save``): write the selected target's trace as a portable bundle."""

from pathlib import Path

import lldb

from ..bundle.saver import SaveModule, SaveProcess, SaveThread, save_bundle
from ..debugger.core_snapshot import core_name, live_snapshot
from ..debugger.histories import live_of
from ..debugger.registry import recorder_for
from ..errors import LldbTraceError
from ..option_table import BUNDLE_FORMATS, Option
from ..perf_data import cpu_streams, save_perf_data
from ..values.core_writer import write_core
from ..values.register_states import register_states_bytes
from .base import TraceCommand
from .selection import selected_trace

END_CORE, START_CORE = "cores/end.core", "cores/start.core"


def _syscalls_name(tid):
    return f"syscalls/{tid}.json"


def _registers_name(tid):
    return f"registers/{tid}.npz"


def kept_states(process):
    """A loaded trace's known states to copy into the saved bundle: ``{place in the bundle: the file's Path}``
    (its cores, system calls' results and register states; a saved trace shows the same values as the loaded
    one).  Copied as Paths, one that is gone is named as the file that cannot be read."""
    sources = {END_CORE: process.core_file, START_CORE: process.start_core_file}
    sources.update({_syscalls_name(thread.tid): thread.syscall_results for thread in process.threads})
    sources.update({_registers_name(thread.tid): thread.register_states for thread in process.threads})
    return {place: Path(source) for place, source in sources.items() if source is not None}


def _live_states(backend, tids):
    """``{place in the bundle: writer(path)}`` of the register states a live software recorder saw."""
    found = {}
    for tid in tids:
        states = backend.state_arrays(tid) if hasattr(backend, "state_arrays") else None
        if states is not None:
            found[_registers_name(tid)] = lambda place, tid=tid, states=states: Path(place).write_bytes(
                register_states_bytes(tid, *states)
            )
    return found


class SaveCommand(TraceCommand):
    name = "save"
    short_help = "Save the selected target's trace as a bundle in LLDB's native intel-pt format, or as a perf.data."
    long_help = (  # one line per paragraph: LLDB wraps each line at the terminal's width
        "\nPATH (the <filename>) is a directory (the bundle is PATH/trace.json) or a .json file. One trace file per"
        " thread (named by tid) and every module with its load address and uuid are written; --copy-images also"
        " copies each module file into PATH/modules/ and points the bundle at the copies (skipping /dev, /proc and"
        " /sys), so the bundle loads on another machine. Existing files are not overwritten without --force, and"
        " nothing is written outside PATH.\n"
        "--format perf writes PATH as a Linux perf.data file instead, as 'perf record -e intel_pt//u' would have"
        " (per thread, or per cpu with its context switches for a per-cpu trace): 'perf script --itrace=i0ns' and"
        " 'trace load' read it. It names each module by the path of the file it was read from; --copy-images does"
        " not apply.\n"
        "--no-core leaves out the ELF core written for a live process traced with 'pt start': PATH/cores/<pid>.core,"
        " named by the bundle's coreFile, the state where its trace ends (what 'trace load' shows values in the past"
        " from). A perf.data gets no core."
    )

    options = (
        Option("c", "copy-images", "Copy every module file into the bundle."),
        Option("f", "force", "Overwrite existing files."),
        Option("F", "format", "What to write.", choices=BUNDLE_FORMATS, default="json"),
        Option("n", "no-core", "Write no core file of a live process."),
    )
    arguments = ("Filename", "plain")

    def run(self, debugger, args, exe_ctx, result):
        if len(args) != 1:
            result.SetError("give one place to save to: pt save PATH (a directory or a .json file)")
            return
        parser = self.get_parser()
        if parser.format == "perf" and parser.was_set("copy-images"):
            raise LldbTraceError(
                "--copy-images does not apply to --format perf: a perf.data names each module by its file's path;"
                " save a bundle (no --format) to copy them"
            )
        target, process_trace = selected_trace(debugger, exe_ctx)
        bundle = process_trace.bundle
        process = process_trace.process
        modules = [SaveModule(m.system_path, m.path, m.load_address, m.build_id or m.uuid) for m in process.modules]
        modules += [  # no file to copy (the vdso of a live process): the bytes come from memory
            SaveModule(name, None, address, None, contents=data)
            for name, address, data in process_trace.source.memory_modules()
        ]
        live_target = live_of(target) or target  # a history view saves the live process it shows
        recorder = recorder_for(live_target)  # after 'pt stop' too: the process still stands where its trace ends
        live = recorder is not None and live_target.GetProcess().IsValid()
        keeps_states = parser.format != "perf" and not parser.was_set("no-core")
        extra = kept_states(process) if keeps_states else {}  # the known states the trace has
        if live and keeps_states:
            extra |= _live_states(recorder.backend, process_trace.tids)
        threads = tuple(
            SaveThread(
                tid,
                process_trace.trace_bytes(tid),
                process_trace.thread_stop(tid),
                process_trace.source.breaks(tid),
                syscall_results=_syscalls_name(tid) if _syscalls_name(tid) in extra else None,
                register_states=_registers_name(tid) if _registers_name(tid) in extra else None,
            )
            for tid in process_trace.tids
        )
        stopped = live and live_target.GetProcess().GetState() == lldb.eStateStopped  # an exited one has no state
        core = core_name(process.pid) if (stopped and keeps_states) or END_CORE in extra else None
        saved = SaveProcess(
            process.pid, process.triple, threads, tuple(modules), process.untraced_children,
            untraced_threads=process.untraced_threads, core_file=core,
            start_core_file=START_CORE if START_CORE in extra else None,
        )  # fmt: skip
        if parser.format == "perf":
            path = save_perf_data(
                args[0], saved, bundle.cpu, bundle.tsc_conversion, cpu_streams(bundle), parser.was_set("force")
            )
            result.AppendMessage(f"Saved the trace of process {process.pid} to {path} (perf.data)")
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
            return
        if END_CORE in extra:
            extra[core] = extra.pop(END_CORE)
        elif core is not None:  # written into the bundle's staging folder with the rest: all of it appears, or none
            snapshot = live_snapshot(live_target.GetProcess())
            extra[core] = lambda place: write_core(snapshot, place)
        path = save_bundle(
            args[0],
            bundle.cpu,
            [saved],
            parser.was_set("copy-images"),
            parser.was_set("force"),
            bundle.tsc_conversion,
            extra,
        )
        result.AppendMessage(f"Saved the trace of process {process.pid} to {path}")
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
