"""``pt save PATH`` (and ``trace save``): write the selected target's trace as a portable bundle."""

import lldb

from ..bundle.saver import SaveModule, SaveProcess, SaveThread, save_bundle
from ..option_table import BUNDLE_FORMATS, Option
from ..perf_data import cpu_streams, save_perf_data
from .base import TraceCommand
from .selection import selected_trace


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
        " not apply."
    )

    options = (
        Option("c", "copy-images", "Copy every module file into the bundle."),
        Option("f", "force", "Overwrite existing files."),
        Option("F", "format", "What to write.", choices=BUNDLE_FORMATS, default="json"),
    )
    arguments = ("Filename", "plain")

    def run(self, debugger, args, exe_ctx, result):
        if len(args) != 1:
            result.SetError("give one place to save to: pt save PATH (a directory or a .json file)")
            return
        _target, process_trace = selected_trace(debugger, exe_ctx)
        bundle = process_trace.bundle
        process = process_trace.process
        modules = [SaveModule(m.system_path, m.path, m.load_address, m.build_id or m.uuid) for m in process.modules]
        modules += [  # no file to copy (the vdso of a live process): the bytes come from memory
            SaveModule(name, None, address, None, contents=data)
            for name, address, data in process_trace.source.memory_modules()
        ]
        threads = tuple(
            SaveThread(
                tid, process_trace.trace_bytes(tid), process_trace.thread_stop(tid), process_trace.source.breaks(tid)
            )
            for tid in process_trace.tids
        )
        saved = SaveProcess(process.pid, process.triple, threads, tuple(modules), process.untraced_children)
        parser = self.get_parser()
        if parser.format == "perf":
            path = save_perf_data(
                args[0], saved, bundle.cpu, bundle.tsc_conversion, cpu_streams(bundle), parser.was_set("force")
            )
            result.AppendMessage(f"Saved the trace of process {process.pid} to {path} (perf.data)")
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
            return
        path = save_bundle(
            args[0], bundle.cpu, [saved], parser.was_set("copy-images"), parser.was_set("force"), bundle.tsc_conversion
        )
        result.AppendMessage(f"Saved the trace of process {process.pid} to {path}")
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
