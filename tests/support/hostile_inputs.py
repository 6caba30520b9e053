"""Hostile inputs built from committed seeds: bundles, ELF modules and raw trace files that lie.

Each builder copies a seed scenario of ``test_traces/`` into a scratch folder,
breaks one thing the way a damaged or malicious file would, and returns the
bundle path.  They are written as mutators (seed in, hostile bundle out) so a
fuzz campaign can draw from them as well as the focused regression tests.
"""

import json
import os
import shutil
import struct
from pathlib import Path

from elftools.elf.elffile import ELFFile

from .paths import TRACES

PSB = bytes.fromhex("0282") * 8
PAGE = 4096


def copy_seed(name, folder):
    """A copy of ``test_traces/<name>`` in ``folder`` that loads on any machine; returns its bundle path.

    Only the modules bundled with it are kept: the system's libraries it names may differ here
    (their code then shows as gaps, which is all the same to a hostile input).
    """
    folder = Path(folder)
    shutil.copytree(TRACES / name, folder, dirs_exist_ok=True)
    bundle = folder / "trace.json"

    def bundled_modules_only(document):
        for process in document["processes"]:
            process["modules"] = [module for module in process["modules"] if "file" in module]

    return edit_bundle(bundle, bundled_modules_only)


def edit_bundle(bundle, change):
    """Rewrite ``bundle``'s JSON with ``change(document)`` applied; returns ``bundle``."""
    document = json.loads(bundle.read_text())
    change(document)
    bundle.write_text(json.dumps(document, indent=1))
    return bundle


def only_thread_trace(bundle):
    """The trace file of the bundle's first thread."""
    document = json.loads(bundle.read_text())
    return bundle.parent / document["processes"][0]["threads"][0]["iptTrace"]


def first_module(bundle):
    """The file of the bundle's first module (the program, in every seed)."""
    document = json.loads(bundle.read_text())
    return bundle.parent / document["processes"][0]["modules"][0]["file"]


# -- raw trace files ---------------------------------------------------------------------------------------------


def trace_ending_in_its_only_psb(folder, size=2 << 20, seed="crash"):
    """The seed with a trace of ``size`` zero bytes (PAD packets) whose only PSB is its last 16 bytes.

    libipt 2.0.5 reads the byte after such a buffer while synchronizing: a file mapped
    whole, of a page-multiple size, ends where the next page may not be mapped.
    """
    bundle = copy_seed(seed, folder)
    trace = only_thread_trace(bundle)
    with open(trace, "wb") as out:
        out.truncate(size - len(PSB))  # sparse: no disk, no time
        out.seek(size - len(PSB))
        out.write(PSB)
    return bundle


def sparse_trace_with_psbs(folder, size, psbs=4, seed="crash"):
    """The seed with a sparse trace of ``size`` bytes: zeros (PAD packets), its own trace placed ``psbs`` times."""
    bundle = copy_seed(seed, folder)
    trace = only_thread_trace(bundle)
    original = trace.read_bytes()
    with open(trace, "wb") as out:
        out.truncate(size)
        for k in range(psbs):
            out.seek((size - len(original)) * k // max(1, psbs - 1) & ~7)
            out.write(original)
    return bundle


# -- bundle documents ---------------------------------------------------------------------------------------------


def pid_of_digits(folder, digits=4301, seed="crash"):
    """A bundle whose pid is an integer literal longer than Python's int parsing limit (4300 digits)."""
    bundle = copy_seed(seed, folder)
    text = bundle.read_text()
    document = json.loads(text)
    pid = str(document["processes"][0]["pid"])
    bundle.write_text(text.replace(f'"pid": {pid}', f'"pid": {"9" * digits}', 1))
    return bundle


def path_with_surrogate(folder, key="iptTrace", seed="crash"):
    """A bundle naming a file with a lone surrogate (``\\udcff``, JSON's escape of no character)."""
    bundle = copy_seed(seed, folder)
    text = bundle.read_text()
    document = json.loads(text)
    name = document["processes"][0]["threads"][0]["iptTrace"]
    if key == "iptTrace":
        return _replace_text(bundle, f'"{name}"', f'"{name}\\udcff"')
    module = document["processes"][0]["modules"][0]["file"]
    return _replace_text(bundle, f'"{module}"', f'"{module}\\ud800"')


def file_name_too_long(folder, seed="crash"):
    """A bundle whose module file name is longer than a file system allows (ENAMETOOLONG)."""
    bundle = copy_seed(seed, folder)
    return edit_bundle(bundle, lambda d: d["processes"][0]["modules"][0].update(file="modules/" + "m" * 300))


def many_processes(folder, count, seed="threads"):
    """The seed's process repeated ``count`` times (new pids and tids), every copy sharing the same files."""
    bundle = copy_seed(seed, folder)
    document = json.loads(bundle.read_text())
    process = document["processes"][0]
    copies = []
    for k in range(count):
        base = 100000 + k * 100
        threads = [{**t, "tid": base + n} for n, t in enumerate(process["threads"])]
        copies.append({**process, "pid": base, "threads": threads})
    document["processes"] = copies
    bundle.write_text(json.dumps(document))
    return bundle


def _replace_text(bundle, old, new):
    text = bundle.read_text()
    assert old in text, old
    bundle.write_text(text.replace(old, new, 1))
    return bundle


# -- ELF modules ---------------------------------------------------------------------------------------------


def patch_section(module, name, **fields):
    """Overwrite header fields (``sh_size``, ``sh_offset``...) of section ``name`` of the ELF file ``module``."""
    with open(module, "rb") as f:
        elf = ELFFile(f)
        index = next(k for k, s in enumerate(elf.iter_sections()) if s.name == name)
        where = elf["e_shoff"] + index * elf["e_shentsize"]
    _patch(module, where, _SECTION_FIELDS, fields)


def patch_segment(module, choose, **fields):
    """Overwrite header fields (``p_memsz``, ``p_filesz``...) of the first PT_LOAD that ``choose(segment)`` picks."""
    with open(module, "rb") as f:
        elf = ELFFile(f)
        index = next(k for k, s in enumerate(elf.iter_segments()) if s["p_type"] == "PT_LOAD" and choose(s))
        where = elf["e_phoff"] + index * elf["e_phentsize"]
    _patch(module, where, _SEGMENT_FIELDS, fields)


def patch_section_bytes(module, name, at, data):
    """Overwrite the bytes at offset ``at`` of section ``name``'s contents in the ELF file ``module``."""
    with open(module, "rb") as f:
        offset = ELFFile(f).get_section_by_name(name)["sh_offset"]
    content = bytearray(Path(module).read_bytes())
    content[offset + at : offset + at + len(data)] = data
    Path(module).write_bytes(bytes(content))


def writable(segment):
    return bool(segment["p_flags"] & 2)


def executable(segment):
    return bool(segment["p_flags"] & 1)


# ELF64 header field (offset, struct format) within a section header and a program header
_SECTION_FIELDS = {"sh_name": (0, "<I"), "sh_type": (4, "<I"), "sh_addr": (16, "<Q"), "sh_offset": (24, "<Q"),
                   "sh_size": (32, "<Q"), "sh_link": (40, "<I"), "sh_entsize": (56, "<Q")}  # fmt: skip
_SEGMENT_FIELDS = {"p_flags": (4, "<I"), "p_offset": (8, "<Q"), "p_vaddr": (16, "<Q"), "p_filesz": (32, "<Q"),
                   "p_memsz": (40, "<Q")}  # fmt: skip


def _patch(module, where, layout, fields):
    data = bytearray(Path(module).read_bytes())
    for name, value in fields.items():
        offset, form = layout[name]
        struct.pack_into(form, data, where + offset, value)
    os.chmod(module, 0o755)
    Path(module).write_bytes(bytes(data))


def module_with_section(folder, section, seed="crash", **fields):
    """The seed with its program's section ``section`` claiming ``fields`` (a huge ``sh_size``...)."""
    bundle = copy_seed(seed, folder)
    patch_section(first_module(bundle), section, **fields)
    return bundle


def module_with_bytes(folder, section, at, data, seed="crash"):
    """The seed with bytes ``data`` written at offset ``at`` of its program's section ``section``."""
    bundle = copy_seed(seed, folder)
    patch_section_bytes(first_module(bundle), section, at, data)
    return bundle


def module_with_segment(folder, choose, seed="crash", **fields):
    """The seed with its program's first PT_LOAD that ``choose`` picks claiming ``fields`` (``p_memsz``...)."""
    bundle = copy_seed(seed, folder)
    patch_segment(first_module(bundle), choose, **fields)
    return bundle
