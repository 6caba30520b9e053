"""Bundle -> LLDB targets: one per process, modules at their load addresses, threads via TraceProcess.

All or nothing: if any process cannot be made into a target, every target
created for the bundle so far is deleted again.
"""

import lldb

from ..elf_info import ElfInfo, NotAnElfError
from ..errors import LldbTraceError
from ..process_trace import ProcessTrace
from . import registry
from .scripted_process import TraceProcess


class TargetError(LldbTraceError):
    """LLDB refused to build a target for the trace."""


def create_targets(debugger, bundle):
    """Targets for every process (and the kernel) of ``bundle``; the first becomes the selected one."""
    created = []
    try:
        for process in bundle.processes:
            created.append(_process_target(debugger, ProcessTrace(bundle, process)))
        if bundle.kernel is not None:
            created.append((_kernel_target(debugger, bundle.kernel), None))
    except Exception:
        for target, key in created:
            registry.remove(key)
            debugger.DeleteTarget(target)
        raise
    targets = [target for target, _key in created]
    if targets:
        debugger.SetSelectedTarget(targets[0])
    return targets


def history_view_target(debugger, process_trace):
    """A target showing ``process_trace`` (a live process's) through a TraceProcess: ``(target, registry key)``."""
    return _process_target(debugger, process_trace)


def _new_target(debugger, triple):
    error = lldb.SBError()
    target = debugger.CreateTarget("", triple, "", False, error)
    if error.Fail() or not target.IsValid():
        raise TargetError(f"LLDB could not create a {triple} target: {error.GetCString()}")
    return target


def _process_target(debugger, process_trace):
    process = process_trace.process
    target = _new_target(debugger, process.triple)
    key = registry.add(target, process_trace)
    try:
        for module in process.modules:
            _check_module_file(module)
            if not target.AddModule(str(module.path), process.triple, module.build_id).IsValid():
                raise TargetError(f"LLDB could not load module {module.path}")
        _prepare(process_trace)
        _launch(debugger, target, key)
        _select_thread(target.GetProcess(), process_trace)
    except Exception:
        registry.remove(key)
        debugger.DeleteTarget(target)
        raise
    return target, key


def _check_module_file(module):
    """Refuse a module file LLDB cannot be given: one it cannot name, or whose headers it would trust and die on.

    LLDB divides by a symbol or relocation table's entry size and reads what a section claims: a
    SIGFPE or a crash of the whole debugger.  The loader checked the file; it may have changed since.
    """
    try:
        str(module.path).encode()
    except UnicodeEncodeError:
        raise TargetError(
            f"LLDB cannot open module {module.path}: its file name is not UTF-8 text, which LLDB's Python API "
            "cannot pass: give the file a UTF-8 name"
        ) from None
    try:
        ElfInfo.read(module.path)
    except NotAnElfError as error:
        raise TargetError(f"LLDB cannot be given module {module.system_path}: {error}") from None
    except OSError as error:
        raise TargetError(f"cannot read module {module.path}: {error.strerror}") from None


def _prepare(process_trace):
    """Decode where each thread stopped, and its frames there, before LLDB asks (ProcessTrace.prepare).

    LLDB asks from its own thread, where an interrupt (Ctrl-C) could not undo the load; here it can.
    A large trace is decoded only at its end: its thread shows frame #0 until a command that shows more
    frames decodes it whole (frames_on_demand.py).
    """
    for tid in process_trace.tids:
        process_trace.prepare(tid)


def _launch(debugger, target, key):
    """Start the ScriptedProcess synchronously, so the next command already sees it stopped."""
    launch_info = lldb.SBLaunchInfo(None)
    launch_info.SetProcessPluginName("ScriptedProcess")
    launch_info.SetScriptedProcessClassName(f"{TraceProcess.__module__}.{TraceProcess.__name__}")
    arguments = lldb.SBStructuredData()
    arguments.SetFromJSON(f'{{"key": "{key}"}}')
    launch_info.SetScriptedProcessDictionary(arguments)
    was_async = debugger.GetAsync()
    debugger.SetAsync(False)
    # LLDB reads memory in whole cache lines from the line's start and keeps them between stops; a position's
    # known bytes can begin mid-line and change with the position: read exactly what is asked, every time.
    try:
        error = lldb.SBError()
        process = target.Launch(launch_info, error)
    finally:
        debugger.SetAsync(was_async)
    if error.Fail() or not process.IsValid():
        raise TargetError(f"LLDB could not create the traced process: {error.GetCString()}")
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(
        "settings set target.process.disable-memory-cache true", lldb.SBExecutionContext(process), result
    )


def _select_thread(process, process_trace):
    """Select the thread live LLDB would have selected (ProcessTrace.stopped_tid)."""
    chosen = process.GetThreadByID(process_trace.stopped_tid or 0)
    if chosen.IsValid():
        process.SetSelectedThread(chosen)


def _kernel_target(debugger, kernel):
    target = _new_target(debugger, "x86_64-unknown-linux-gnu")
    module = target.AddModule(str(kernel.path), "x86_64-unknown-linux-gnu", None)
    if not module.IsValid():
        debugger.DeleteTarget(target)
        raise TargetError(f"LLDB could not load the kernel image {kernel.path}")
    slide = kernel.load_address - module.GetObjectFileHeaderAddress().GetFileAddress()
    target.SetModuleLoadAddress(module, slide)
    return target
