"""Writing a trace bundle in LLDB's native intel-pt format (so native ``trace load`` reads it too).

The saver gets plain data (the SaveProcess records below), not LLDB objects:
the post-mortem path builds them from a loaded bundle, the live path from the
target's image list and its capture buffers.  PATH is a directory (the bundle
is PATH/trace.json) or a ``.json`` file (its directory holds the rest).  It
refuses to overwrite files unless forced, and never writes outside PATH's
directory.
"""

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import LldbTraceError

_NOT_COPIED = ("/dev/", "/proc/", "/sys/")


class SaveError(LldbTraceError):
    """The bundle cannot be written as asked."""


@dataclass(frozen=True)
class SaveModule:
    system_path: str
    path: Path | None  # the file to copy (None: only in memory, such as the vdso)
    load_address: int
    uuid: str | None
    memory: bytes | None = None  # the module's bytes when there is no file to copy


@dataclass(frozen=True)
class SaveProcess:
    pid: int
    triple: str
    threads: tuple  # (tid, trace bytes or None)
    modules: tuple  # SaveModule


def bundle_paths(path):
    """``(directory, bundle file)`` for a PATH that is a directory or a .json file."""
    path = Path(path)
    if path.suffix == ".json":
        return path.parent, path
    return path, path / "trace.json"


def save_bundle(path, cpu, processes, copy_images=False, force=False, tsc_conversion=None):
    """Write the bundle; returns the bundle file's path."""
    directory, bundle_file = bundle_paths(path)
    planned = {bundle_file: json.dumps(_document(cpu, processes, copy_images, tsc_conversion), indent=2) + "\n"}
    for process in processes:
        for tid, trace in process.threads:
            if trace is not None:
                planned[directory / "traces" / f"{tid}.intelpt_trace"] = trace
    copies = _copies(directory, processes, copy_images)
    if copies:
        copied = {m.system_path: str(target.relative_to(directory)) for target, m in copies.items()}
        planned[directory / "copied_images.json"] = json.dumps(copied, indent=2) + "\n"
    targets = [*planned, *copies]
    for target in targets:
        _check_inside(directory, target)
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        raise SaveError(f"{existing[0]} already exists ({len(existing)} files would be overwritten): add --force")
    try:
        for target, content in planned.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
        for target, module in copies.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            if module.memory is not None:
                target.write_bytes(module.memory)
            else:
                shutil.copyfile(module.path, target)
    except OSError as error:
        raise SaveError(f"cannot write {error.filename}: {error.strerror}") from None
    return bundle_file


def _check_inside(directory, target):
    root = os.path.realpath(directory)
    if os.path.commonpath([root, os.path.realpath(target)]) != root:
        raise SaveError(f"{target} would be outside {directory}: refusing to write there")


def _copy_name(module):
    return Path("modules") / module.system_path.lstrip("/")


def _copyable(module):
    return module.memory is not None or (
        module.path is not None and not str(module.system_path).startswith(_NOT_COPIED)
    )


def _copies(directory, processes, copy_images):
    """Files to write into the bundle: every module's with --copy-images; memory-only ones (the vdso) always."""
    return {
        directory / _copy_name(m): m
        for p in processes
        for m in p.modules
        if m.memory is not None or (copy_images and _copyable(m))
    }


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
    if tsc_conversion is not None:
        document["tscPerfZeroConversion"] = {
            "timeMult": tsc_conversion.time_mult,
            "timeShift": tsc_conversion.time_shift,
            "timeZero": tsc_conversion.time_zero,
        }
    return document


def _process(process, copy_images):
    modules = []
    for module in process.modules:
        entry = {"systemPath": module.system_path, "loadAddress": f"0x{module.load_address:x}"}
        if module.memory is not None or (copy_images and _copyable(module)):
            entry["file"] = str(_copy_name(module))
        elif module.path is not None and str(module.path) != module.system_path:
            entry["file"] = str(module.path)
        if module.uuid:
            entry["uuid"] = module.uuid
        modules.append(entry)
    threads = []
    for tid, trace in process.threads:
        thread = {"tid": tid}
        if trace is not None:
            thread["iptTrace"] = f"traces/{tid}.intelpt_trace"
        threads.append(thread)
    return {"pid": process.pid, "triple": process.triple, "threads": threads, "modules": modules}
