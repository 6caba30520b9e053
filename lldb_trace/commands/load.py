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
        bundles = [load_bundle(path) for path in args]  # check every bundle before creating any target
        for bundle in bundles:
            targets = create_targets(debugger, bundle)
            result.AppendMessage(f"Loaded {bundle.path} ({bundle.format}, {bundle.cpu}):")
            for target in targets:
                result.AppendMessage(f"  target #{debugger.GetIndexOfTarget(target)}: {_describe(target)}")
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


def _describe(target):
    process = target.GetProcess()
    name = target.GetExecutable().GetFilename() or "(no executable)"
    if not process.IsValid():
        return f"{name}, {target.GetNumModules()} module(s)"
    threads = process.GetNumThreads()
    return f"{name}, pid {process.GetProcessID()}, {threads} thread(s), {target.GetNumModules()} module(s)"
