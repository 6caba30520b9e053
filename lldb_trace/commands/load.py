"""``pt load BUNDLE...`` (and ``trace load``): bundles become stopped post-mortem targets."""

import lldb

from ..debugger import registry
from ..debugger.postmortem import create_targets
from ..decode.truncation import find_file_cut
from ..option_table import CORE, SEARCH_PATH, SYSROOT, Option
from ..perf_data import BinarySearch
from ..trace_files import load_trace
from ..views import info_text
from .base import TraceCommand, help_paragraphs
from .dump import lldb_session_info


class LoadCommand(TraceCommand):
    name = "load"
    short_help = "Load trace bundles: each traced process becomes a target stopped where its trace ends."
    long_help = help_paragraphs(
        "Each <filename> is a trace bundle's JSON file, or a folder holding trace.json, in the processor-trace RFC's"
        " format or in LLDB's native intel-pt format ('pt schema all' shows both), or a Linux perf.data recorded with"
        " the intel_pt event (per thread or per cpu). Every process in it becomes a"
        " target with its modules at their load addresses and one thread per traced thread, stopped where its"
        " trace ends, so 'thread list', 'bt', 'image lookup', 'disassemble' and 'source list' work as on a core"
        " file. Then 'trace dump --instructions' and 'trace dump --function-calls' show what ran.",
        "A bundle with any problem is rejected whole, naming the JSON path or the file at fault, and no target is"
        " left behind.",
        "A perf.data names its binaries by path: each is read from there, else from perf's build-id cache"
        " (~/.debug), else from the same path under each --sysroot, else from each --search-path folder (by path"
        " or file name); a build-id that differs (the program was rebuilt) is passed over. A binary not found"
        " leaves its code a gap in the trace, named by 'trace dump'.",
        "A process's core file where its trace ends (a bundle's 'coreFile', or --core CORE for a perf.data or to"
        " replace the bundle's) gives the values at the end of its history; one of another process, another build"
        " or another moment than where the trace ends is refused, naming the mismatch.",
        "--verbose also prints what each target holds, as 'trace dump' shows it: the CPU, every module (file"
        " read, load address, size, uuid) and every thread's trace.",
    )

    options = (
        Option("v", "verbose", "Also print each target's modules and threads' traces."),
        SEARCH_PATH,
        SYSROOT,
        CORE,
    )
    arguments = ("Filename", "plus")

    def run(self, debugger, args, exe_ctx, result):
        if not args:
            result.SetError("give the bundle to load: pt load BUNDLE.json ('pt schema all' shows the formats)")
            return
        core = self.get_parser().core if self.get_parser().was_set("core") else None
        if core is not None and len(args) > 1:
            result.SetError(f"--core goes with one trace file, not {len(args)}: load the others separately")
            return
        binaries = BinarySearch.default(self.values("sysroot"), self.values("search-path"))
        bundles = [load_trace(path, binaries, core) for path in args]  # check every bundle before creating any target
        for bundle in bundles:
            targets = create_targets(debugger, bundle)
            result.AppendMessage(f"Loaded {bundle.path} ({bundle.format}, {bundle.cpu}):")
            for target in targets:
                result.AppendMessage(f"  target #{debugger.GetIndexOfTarget(target)}: {_describe(target)}")
                for warning in _warnings(target):
                    result.AppendMessage(f"    warning: {warning}")
                if self.get_parser().was_set("verbose"):
                    result.AppendMessage(_contents(target))
        if bundles:
            result.AppendMessage(_stop_location(debugger).rstrip())
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def _warnings(target):
    """What to know before trusting where a thread is shown stopped: a cut trace, or one without instructions.

    Threads LLDB has not asked about yet are not decoded for this: a cut is found from the file's tail.
    """
    process_trace = registry.for_target(target)
    found = []
    for thread in process_trace.process.threads if process_trace else ():
        decoded = process_trace.decoded_if_done(thread.tid)
        cut = decoded.truncation if decoded is not None else thread.trace and find_file_cut(thread.trace)
        if cut:
            found.append(f"thread {thread.tid}: the trace is truncated: it ends inside {cut.describe()}")
        elif decoded is not None:
            unmapped = _unmapped(process_trace, decoded)
            if not decoded.instruction_count:
                found.append(f"thread {thread.tid}: its trace holds no instructions{unmapped and ': it ' + unmapped}")
            elif unmapped:
                found.append(f"thread {thread.tid}: its trace {unmapped}")
    return found


def _unmapped(process_trace, decoded):
    """Where decoding met code at an address no module covers (a wrong ``loadAddress``, a module left out)."""
    segment_at = process_trace.module_bytes.segment_at
    missing = next(
        (gap.missing_ip for gap in decoded.gaps if gap.missing_ip is not None and segment_at(gap.missing_ip) is None),
        None,
    )
    if missing is None:
        return ""
    return (
        f"runs code at {missing:#x}, which no module covers (gaps in the trace): add the module mapped there, "
        "or check the modules' loadAddress values"
    )


def _contents(target):
    """What ``trace dump`` says of ``target`` and all its threads, indented under the target's line."""
    process_trace = registry.for_target(target)
    if process_trace is None:  # the kernel's target: its module only
        return f"    {target.GetModuleAtIndex(0).GetFileSpec().fullpath} (kernel image)"
    info = info_text(lldb_session_info(process_trace, target, process_trace.tids, verbose=False))
    return "\n".join(f"    {line}" for line in info.splitlines())


def _stop_location(debugger):
    """Where the selected thread stopped, with source, as LLDB shows a stop (this also sets 'source list')."""
    thread = debugger.GetSelectedTarget().GetProcess().GetSelectedThread()
    status = lldb.SBStream()
    if thread.IsValid():
        thread.GetStatus(status)
    return status.GetData() or ""


def _describe(target):
    process = target.GetProcess()
    name = target.GetExecutable().GetFilename() or "(no executable)"
    if not process.IsValid():
        return f"{name}, {target.GetNumModules()} module(s)"
    threads = process.GetNumThreads()
    return f"{name}, pid {process.GetProcessID()}, {threads} thread(s), {target.GetNumModules()} module(s)"
