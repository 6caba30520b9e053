"""Read and check a bundle file, all or nothing: every problem is one line naming the JSON path or file.

The checks a debugger would otherwise trip over later (a missing or empty
trace, a module that is not the binary that ran) are made here, before any
LLDB target exists, so a failed load leaves nothing half-created.
"""

import json
from pathlib import Path

from ..elf_info import DamagedElfError, ElfInfo, NotAnElfError
from ..errors import LldbTraceError
from .file_checks import not_a_regular_file, path_problem, psb_search, shown_path
from .model import Bundle, ClockInfo, CpuInfo, CpuTrace, Kernel, Module, Process, Thread, TscConversion
from .schemas import UINT64_MAX, SchemaError, address_value, validate
from .stops import stop_from_json

DEFAULT_TRIPLE = "x86_64-unknown-linux-gnu"
DEFAULT_KERNEL_LOAD_ADDRESS = 0xFFFFFFFF81000000
BUNDLE_FILE_IN_DIRECTORY = "trace.json"
# A process's core files: (bundle key, Process field, what the file is in messages).
_CORE_KEYS = (("coreFile", "core_file", "core file"), ("startCoreFile", "start_core_file", "start state core file"))
_MACHINES = {"x86_64": "EM_X86_64", "i386": "EM_386", "i486": "EM_386", "i586": "EM_386", "i686": "EM_386"}


class BundleError(LldbTraceError):
    """The bundle cannot be loaded; the message names where and what to do."""


def load_bundle(path):
    """Parse, validate and check the JSON bundle at ``path`` (a file, or a folder holding trace.json).

    A perf.data is not one: trace_files.load_trace chooses the loader by the file's first bytes.
    """
    path = bundle_file(Path(path).expanduser().absolute())
    text = _read_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise BundleError(f"{path}:{error.lineno}:{error.colno}: invalid JSON: {error.msg}") from None
    except ValueError:  # an integer literal past Python's limit of 4300 digits
        raise BundleError(
            f"{path}: a number in the bundle has thousands of digits: no id, size or address is that long"
        ) from None
    except RecursionError:
        raise BundleError(f"{path}: JSON nested too deeply to be a trace bundle") from None
    schema_name = _schema_name(path, document)
    try:
        validate(document, schema_name)
    except SchemaError as error:
        raise BundleError(f"{path}: {error} (see 'trace schema {schema_name}')") from None
    return _Builder(path, schema_name).build(document, text)


def bundle_file(path):
    """The file a bundle path names: ``path`` itself, or trace.json in the folder ``path``; never a pipe or device."""
    problem = path_problem(path)
    if problem is not None and problem != "does not exist":  # which the reading says, as "no such bundle file"
        raise BundleError(f"{shown_path(path)} {problem}")
    if path.is_dir():
        inside = path / BUNDLE_FILE_IN_DIRECTORY
        problem = path_problem(inside)
        if problem is not None and problem != "does not exist":
            raise BundleError(f"{shown_path(inside)} {problem}")
        if not inside.is_file():
            raise BundleError(
                f"{path} is a directory without a {BUNDLE_FILE_IN_DIRECTORY}: give the bundle's JSON file"
            )
        return inside
    kind = path.exists() and not_a_regular_file(path)
    if kind:
        raise BundleError(f"{path} is {kind}, not a bundle file: give the bundle's JSON file")
    return path


def _read_text(path):
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError(f"{path}: no such bundle file") from None
    except PermissionError:
        raise BundleError(f"{path}: permission denied: make the bundle readable (chmod +r)") from None
    except UnicodeDecodeError:
        raise BundleError(f"{path}: not a JSON text file (is it a raw trace? load the bundle's .json)") from None
    except OSError as error:
        raise BundleError(f"{path}: cannot read: {error.strerror}") from None


def _schema_name(path, document):
    if isinstance(document, dict) and "trace" in document:
        return "intel-pt"
    if isinstance(document, dict) and "type" in document:
        return "intel-pt-lldb"
    raise BundleError(
        f"{path}: not a trace bundle: expected an object with a 'trace' object (the RFC's format) "
        "or a 'type' key (LLDB's format); see 'trace schema all'"
    )


def _clock(timing):
    """The bundle's ``timing`` object (the schema checked it) as a ClockInfo, or None."""
    if timing is None:
        return None
    ratio = timing.get("tscCtcRatio")
    return ClockInfo(
        mtc_period=timing.get("mtcPeriod"),
        tsc_ctc_ratio=ratio and (ratio["numerator"], ratio["denominator"]),
        nominal_ratio=timing.get("nominalRatio"),
        cycle_accurate=timing.get("cycleAccurate", False),
    )


def parse_address(value):
    """An address given as an int, a decimal string or a 0x-prefixed hex string (the schema checked its form)."""
    return address_value(value)


def normalize_uuid(text):
    """Build-ids compare as lowercase hex; LLDB prints them with dashes and in upper case."""
    return text.replace("-", "").lower()


class _Builder:
    """Turns a schema-valid document into a Bundle, checking files as it goes."""

    def __init__(self, path, schema_name):
        self.path = path
        self.schema_name = schema_name
        self.native = schema_name == "intel-pt-lldb"
        self.owners = {}  # tid or pid -> JSON path of its first appearance

    def build(self, document, text):
        settings = document if self.native else document["trace"]
        cpu = settings["cpuInfo" if self.native else "pt_cpu"]
        vendor = "intel" if cpu["vendor"] in ("GenuineIntel", "intel") else "unknown"
        cpus = tuple(self._cpu(f"cpus[{i}]", c) for i, c in enumerate(document.get("cpus", ())))
        processes = tuple(
            self._process(f"processes[{i}]", p, per_cpu=bool(cpus)) for i, p in enumerate(document.get("processes", ()))
        )
        conversion = settings.get("tscPerfZeroConversion")
        kernel = document.get("kernel")
        return Bundle(
            path=self.path,
            format=self.schema_name,
            cpu=CpuInfo(vendor, cpu["family"], cpu["model"], cpu["stepping"], _clock(settings.get("timing"))),
            processes=processes,
            cpus=cpus,
            tsc_conversion=conversion
            and TscConversion(conversion["timeMult"], conversion["timeShift"], parse_address(conversion["timeZero"])),
            kernel=kernel and self._kernel(kernel),
            text=text,
        )

    def _process(self, where, process, per_cpu):
        triple = process.get("triple") or DEFAULT_TRIPLE
        arch = triple.split("-")[0]
        if arch not in _MACHINES:
            raise BundleError(f"{self.path}: {where}.triple: '{triple}' is not an x86 triple: Intel PT traces x86 code")
        self._claim(f"{where}.pid", "pid", process["pid"])
        threads = tuple(self._thread(f"{where}.threads[{i}]", t, per_cpu) for i, t in enumerate(process["threads"]))
        modules = tuple(self._module(f"{where}.modules[{i}]", m, arch) for i, m in enumerate(process["modules"]))
        self._check_disjoint(f"{where}.modules", modules)
        children = tuple(process.get("untracedChildren", ()))
        untraced = tuple(process.get("untracedThreads", ()))
        cores = {
            field: self._file(f"{where}.{key}", process[key], what, "fix the path, or remove the key")
            for key, field, what in _CORE_KEYS
            if key in process
        }
        return Process(
            process["pid"], triple, threads, modules, untraced_children=children, untraced_threads=untraced, **cores
        )

    def _check_disjoint(self, where, modules):
        """Modules of one process cannot share addresses: the decoder would find only one of them there."""
        spans = sorted((m.load_address, m.load_address + m.size, k) for k, m in enumerate(modules) if m.size)
        widest = None  # the span reaching furthest so far
        for span in spans:
            if widest and span[0] < widest[1]:
                first, second = sorted((widest, span), key=lambda s: s[2])
                shown = [f"{modules[s[2]].path} at {s[0]:#x}-{s[1]:#x}" for s in (first, second)]
                raise BundleError(
                    f"{self.path}: {where}[{second[2]}].loadAddress: {shown[1]} overlaps {where}[{first[2]}], "
                    f"{shown[0]}: each module needs addresses of its own; fix one of the loadAddress values"
                )
            if widest is None or span[1] > widest[1]:
                widest = span

    def _claim(self, where, kind, number):
        first = self.owners.setdefault((kind, number), where)
        if first != where:
            raise BundleError(f"{self.path}: {where}: {kind} {number} appears twice (also at {first})")

    def _thread(self, where, thread, per_cpu):
        self._claim(f"{where}.tid", "tid", thread["tid"])
        stop = thread.get("stopReason")
        stop = stop_from_json(stop) if stop is not None else None
        results = thread.get("syscallResults")
        results = results and self._file(f"{where}.syscallResults", results, "system call results file")
        states = thread.get("registerStates")
        states = states and self._file(f"{where}.registerStates", states, "register states file")
        key = "iptTrace" if self.native else "traceFile"
        if key not in thread:
            return Thread(thread["tid"], None, stop, results, register_states=states)
        if per_cpu:
            raise BundleError(f"{self.path}: {where}.{key}: a bundle with per-cpu traces ('cpus') has no thread traces")
        trace = self._trace_file(f"{where}.{key}", thread[key])
        return Thread(thread["tid"], trace, stop, results, register_states=states)

    def _cpu(self, where, cpu):
        self._claim(f"{where}.id", "cpu", cpu["id"])
        return CpuTrace(
            cpu["id"],
            self._trace_file(f"{where}.iptTrace", cpu["iptTrace"]),
            self._file(f"{where}.contextSwitchTrace", cpu["contextSwitchTrace"], "context switch trace"),
        )

    def _trace_file(self, where, name):
        path = self._file(where, name, "trace file")
        size = path.stat().st_size
        if size == 0:
            raise BundleError(f"{self.path}: {where}: {path} is empty: the capture recorded no trace here")
        has_psb, all_zero = psb_search(path)
        if not has_psb:
            what = "zero bytes only (PAD packets)" if all_zero else "no PSB packet, where decoding starts,"
            raise BundleError(
                f"{self.path}: {where}: {path} holds {what} in its {size} bytes: no instruction can be decoded "
                "from it; is it the raw Intel PT trace?"
            )
        return path

    def _file(self, where, name, what, fix="fix the path"):
        """Resolve ``name`` against the bundle's folder and check it is a readable file."""
        path = (self.path.parent / name).absolute()
        problem = path_problem(path)
        if problem is not None:
            raise BundleError(f"{self.path}: {where}: {what} {shown_path(path)} {problem}: {fix}")
        kind = not_a_regular_file(path)
        if kind:
            raise BundleError(f"{self.path}: {where}: {what} {path} is {kind}, not a file: {fix}")
        try:
            with open(path, "rb"):
                pass
        except PermissionError:
            raise BundleError(f"{self.path}: {where}: {what} {path} is not readable: chmod +r it") from None
        return path

    def _module(self, where, module, arch):
        key = "file" if "file" in module else "systemPath"
        fix = "copy the module there, or bundle it with 'trace save --copy-images'"
        path = self._file(f"{where}.{key}", module[key], "module", fix)
        elf = self._elf(f"{where}.{key}", path)
        if elf.machine != _MACHINES[arch]:
            raise BundleError(
                f"{self.path}: {where}.{key}: {path} is an {elf.machine} ELF file, but the process is {arch}"
            )
        build_id = elf.build_id
        uuid = module.get("uuid")
        if uuid and build_id and normalize_uuid(uuid) != build_id:
            raise BundleError(
                f"{self.path}: {where}.uuid: {path} has build-id {build_id}, not {normalize_uuid(uuid)}: "
                "it is not the binary that ran; set 'file' to a copy of the original"
            )
        if not elf.segments:
            raise BundleError(
                f"{self.path}: {where}.{key}: {path} has no loadable segments (PT_LOAD): it is not a program "
                "or shared library (an object or debug-info file?); point it at the module that ran"
            )
        load_address = parse_address(module["loadAddress"])
        if load_address + elf.load_span > UINT64_MAX + 1:
            raise BundleError(
                f"{self.path}: {where}.loadAddress: {path} ({elf.load_span} bytes) at {load_address:#x} would run "
                "past the end of the 64-bit address space"
            )
        return Module.from_elf(module["systemPath"], path, elf, load_address, uuid)

    def _elf(self, where, path):
        try:
            return ElfInfo.read(path)
        except DamagedElfError as error:
            raise BundleError(f"{self.path}: {where}: {error}: point it at an intact copy of the module") from None
        except NotAnElfError as error:
            with open(path, "rb") as file:
                damaged = file.read(4) == b"\x7fELF"
            what = f"a damaged (truncated?) ELF file ({error.reason})" if damaged else "not an ELF file"
            raise BundleError(f"{self.path}: {where}: {path} is {what}: point it at the module's binary") from None
        except OSError as error:
            raise BundleError(f"{self.path}: {where}: cannot read {path}: {error.strerror}") from None

    def _kernel(self, kernel):
        path = self._file("kernel.file", kernel["file"], "kernel image")
        elf = self._elf("kernel.file", path)
        if not elf.is_x86_64:
            raise BundleError(f"{self.path}: kernel.file: {path} is an {elf.machine} ELF file, not x86-64")
        return Kernel(path, parse_address(kernel.get("loadAddress", DEFAULT_KERNEL_LOAD_ADDRESS)))
