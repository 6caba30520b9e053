"""Writing a trace bundle in LLDB's native intel-pt format (so native ``trace load`` reads it too).

The one bundle writer.  It gets plain data (the Save* records below), not LLDB objects: the post-mortem
path builds them from a loaded bundle, the live path from the target's image list and its capture
buffers, the recorder from its recording (adding its ground truth and recording.json).  PATH is a
directory (the bundle is PATH/trace.json) or a ``.json`` file (its directory holds the rest).  The files
are staged, then put in place at once (bundle.placing), so an error leaves nothing half-written.
Existing files are refused unless forced, and nothing is written outside PATH's directory.
"""

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import LldbTraceError
from ..given_paths import given_path
from . import placing
from .model import ThreadStop
from .stops import stop_json

_NOT_COPIED = ("/dev/", "/proc/", "/sys/")


class SaveError(LldbTraceError):
    """The bundle cannot be written as asked."""


@dataclass(frozen=True)
class SaveModule:
    system_path: str
    path: Path | None  # the file to copy (None: only in memory, such as the vdso)
    load_address: int
    uuid: str | None
    contents: bytes | None = None  # the module's bytes when there is no file to copy
    copy: bool = False  # copied into the bundle even without copy_images (``record --copy-program``)


@dataclass(frozen=True)
class SaveThread:
    tid: int
    trace: bytes | None
    stop: ThreadStop | None = None
    breaks: tuple = ()  # where the trace was lost (a perf.data's): a bundle cannot say so, a perf.data can
    syscall_results: str | None = None  # the bundle's file of its syscall results (written by the caller)
    register_states: str | None = None  # and of the registers a recorder saw along its trace


@dataclass(frozen=True)
class SaveProcess:
    pid: int
    triple: str
    threads: tuple  # SaveThread
    modules: tuple  # SaveModule
    untraced_children: tuple = ()  # pids of the processes it created that ran without tracing
    untraced_threads: tuple = ()  # tids of its threads that ran without tracing
    core_file: str | None = None  # the bundle's file of its core where the trace ends (written by the caller)
    start_core_file: str | None = None  # the same where recording started


def bundle_paths(path):
    """``(directory, bundle file)`` for a PATH that is a directory or a .json file."""
    path = given_path(path, "the bundle (a folder, or a .json file)")
    if path.suffix == ".json":
        return path.parent, path
    return path, path / "trace.json"


def save_bundle(path, cpu, processes, copy_images=False, force=False, tsc_conversion=None, extra_files=None):
    """Write the bundle, with ``extra_files`` (as :func:`write_files` takes them: a process's core); returns the
    bundle file's path."""
    directory, bundle_file = bundle_paths(path)
    files = bundle_files(bundle_file.name, cpu, processes, copy_images, tsc_conversion)
    write_files(directory, bundle_file.name, {**files, **(extra_files or {})}, force)
    return bundle_file


def bundle_files(bundle_name, cpu, processes, copy_images=False, tsc_conversion=None):
    """Every file of the bundle, ``{relative path: text, bytes or the Path of a file to copy}``."""
    files = {bundle_name: _json(_document(cpu, processes, copy_images, tsc_conversion))}
    for process in processes:
        for thread in process.threads:
            if thread.trace is not None:
                files[_trace_name(thread.tid)] = thread.trace
    copies = {copy_name(m): m for p in processes for m in p.modules if _copied(m, copy_images)}
    for name, module in copies.items():
        files[name] = module.contents if module.contents is not None else Path(module.path)
    if copies:
        files["copied_images.json"] = _json({module.system_path: name for name, module in copies.items()})
    return files


def write_files(directory, bundle_name, files, force=False, own_folder=None):
    """Write ``files`` (as :func:`bundle_files` gives them, or a function that writes the file) into ``directory``.

    Existing files are refused unless ``force``.  With ``own_folder`` (the recorder's), ``directory`` is the
    bundle's own: one that is not empty is refused unless ``force``, then replaced whole if
    ``own_folder(directory)`` says all it holds is an earlier bundle's, else given the new files beside the rest.
    """
    directory = Path(directory)
    for name in files:
        _check_inside(directory, directory / name)
    mode = destination_mode(directory, bundle_name, files, force, own_folder)
    try:
        staging = placing.staging_folder(directory, beside=mode != "add")
    except placing.PlacingError as error:
        raise SaveError(str(error)) from None
    try:
        for name, content in files.items():
            _write(staging / name, content)
        if mode == "create":
            placing.create(staging, directory)
        elif mode == "exchange":
            placing.exchange(staging, directory)
        else:
            placing.add(staging, directory, files, bundle_name)
    except OSError as error:
        shown = str(error.filename or directory).replace(str(staging), str(directory))
        raise SaveError(f"cannot write {shown}: {error.strerror}") from None
    except placing.PlacingError as error:
        raise SaveError(str(error)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # already gone once placed


def destination_mode(directory, bundle_name, files, force, own_folder=None):
    """How ``files`` go into ``directory``: "create" it, "exchange" its whole content, or "add" them to it.

    Raises SaveError, before anything is written, when they may not go there (see :func:`write_files`).
    """
    if not directory.exists():
        return "create"
    if not directory.is_dir():
        raise SaveError(f"{directory} is a file, not a folder: give a folder (or a .json file) to save into")
    if own_folder is not None:
        if next(directory.iterdir(), None) is None:
            return "add"
        if not force:
            if (directory / bundle_name).exists():
                raise SaveError(f"{directory} already holds a bundle ({bundle_name}): add --force to replace it")
            raise SaveError(f"{directory} is not empty: give a new or empty folder, or add --force to add to it")
        return "exchange" if own_folder(directory) and not directory.is_symlink() else "add"
    existing = [str(directory / name) for name in files if (directory / name).exists()]
    if existing and not force:
        raise SaveError(f"{existing[0]} already exists ({len(existing)} files would be overwritten): add --force")
    return "add"


def _write(target, content):
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, Path):
        try:
            shutil.copyfile(content, target)
        except OSError as error:  # which file failed is not always the one the error names (sendfile's)
            if not os.access(content, os.R_OK):
                raise SaveError(f"cannot read {content} to copy it into the bundle: {error.strerror}") from None
            raise OSError(error.errno, error.strerror, str(target)) from None
    elif callable(content):
        content(target)
    else:
        target.write_bytes(content.encode() if isinstance(content, str) else content)


def _json(value):
    return json.dumps(value, indent=2) + "\n"


def _check_inside(directory, target):
    root = os.path.realpath(directory)
    if os.path.commonpath([root, os.path.realpath(target)]) != root:
        raise SaveError(f"{target} would be outside {directory}: refusing to write there")


def _trace_name(tid):
    return f"traces/{tid}.intelpt_trace"


def copy_name(module):
    """Where a module's copy goes in a bundle's folder (the vdso's bytes, --copy-images)."""
    return str(Path("modules") / module.system_path.lstrip("/"))


def _copied(module, copy_images):
    """Memory-only modules (the vdso) are always written; files with --copy-images (or when marked)."""
    if module.contents is not None:
        return True
    wanted = copy_images or module.copy
    return wanted and module.path is not None and not str(module.system_path).startswith(_NOT_COPIED)


def _document(cpu, processes, copy_images, tsc_conversion):
    document = {
        "type": "intel-pt",
        "cpuInfo": {
            "vendor": "GenuineIntel" if cpu.vendor == "intel" else "unknown",
            "family": cpu.family,
            "model": cpu.model,
            "stepping": cpu.stepping,
        },
        "processes": [_process(process, copy_images) for process in processes],
    }
    if cpu.clock is not None:
        document["timing"] = _timing(cpu.clock)
    if tsc_conversion is not None:
        document["tscPerfZeroConversion"] = {
            "timeMult": tsc_conversion.time_mult,
            "timeShift": tsc_conversion.time_shift,
            "timeZero": tsc_conversion.time_zero,
        }
    return document


def _timing(clock):
    timing = {"cycleAccurate": clock.cycle_accurate}
    if clock.mtc_period is not None:
        timing["mtcPeriod"] = clock.mtc_period
    if clock.tsc_ctc_ratio is not None:
        timing["tscCtcRatio"] = dict(zip(("numerator", "denominator"), clock.tsc_ctc_ratio, strict=True))
    if clock.nominal_ratio is not None:
        timing["nominalRatio"] = clock.nominal_ratio
    return timing


def _process(process, copy_images):
    modules = []
    for module in process.modules:
        listed = {"systemPath": module.system_path, "loadAddress": f"0x{module.load_address:x}"}
        if _copied(module, copy_images):
            listed["file"] = copy_name(module)
        elif module.path is not None and str(module.path) != module.system_path:
            listed["file"] = str(module.path)
        if module.uuid:
            listed["uuid"] = module.uuid
        modules.append(listed)
    document = {
        "pid": process.pid,
        "triple": process.triple,
        "threads": [_thread(t) for t in process.threads],
        "modules": modules,
    }
    if process.untraced_children:
        document["untracedChildren"] = list(process.untraced_children)
    if process.untraced_threads:
        document["untracedThreads"] = list(process.untraced_threads)
    if process.core_file is not None:
        document["coreFile"] = process.core_file
    if process.start_core_file is not None:
        document["startCoreFile"] = process.start_core_file
    return document


def _thread(thread):
    listed = {"tid": thread.tid}
    if thread.trace is not None:
        listed["iptTrace"] = _trace_name(thread.tid)
    if thread.stop is not None:
        listed["stopReason"] = stop_json(thread.stop)
    if thread.syscall_results is not None:
        listed["syscallResults"] = thread.syscall_results
    if thread.register_states is not None:
        listed["registerStates"] = thread.register_states
    return listed
