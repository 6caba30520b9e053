"""``pt load BUNDLE...`` (and ``trace load``): bundles become stopped post-mortem targets."""

import lldb

from ..bundle import load_bundle
from ..target.postmortem import create_targets
from .base import TraceCommand


class LoadCommand(TraceCommand):
    name = "load"
    short_help = "Load trace bundles: each traced process becomes a target stopped where its trace ends."
    long_help = (
        "Each BUNDLE is a trace bundle JSON file (or a folder holding trace.json) in the RFC's format or\n"
        "LLDB's native intel-pt format ('pt schema all' shows both). Every process in it becomes a target\n"
        "with its modules at their load addresses and one thread per traced thread, stopped at the last\n"
        "traced instruction, so 'thread list', 'bt', 'image lookup' and 'disassemble' work as on a core\n"
        "file. A bundle with any problem is rejected whole, with the JSON path or file at fault."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypeFilename, repeat="plus")])

    def run(self, debugger, args, exe_ctx, result):
        if not args:
            result.SetError("give the bundle to load: pt load BUNDLE.json ('pt schema all' shows the formats)")
            return
        bundles = [load_bundle(path) for path in args]  # check every bundle before creating any target
        for bundle in bundles:
            targets = create_targets(debugger, bundle)
            result.AppendMessage(f"Loaded {bundle.path} ({bundle.format}, {bundle.cpu}):")
            for target in targets:
                result.AppendMessage(f"  target #{debugger.GetIndexOfTarget(target)}: {_describe(target)}")
        if bundles:
            result.AppendMessage(_stop_location(debugger).rstrip())
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


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
