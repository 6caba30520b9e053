"""Mutants of the committed bundles for the fuzz campaigns: their JSON, their trace files and their ELF modules.

Each seed is a committed scenario copied into a scratch folder with only its
bundled modules (support/hostile_inputs.py ``copy_seed``: it loads alike on
every machine) and its paths made absolute, so a mutant can be written
anywhere.  A mutant is ``(bytes, description)``, drawn from a
``random.Random`` seeded by the campaign's seed and the mutant's number, so
the same number always gives the same mutant:

- ``bundle``: the seed's JSON with one to three nodes replaced, removed or
  repeated (huge and negative numbers, wrong types, odd paths, lone
  surrogates), or its text cut or flipped;
- ``trace``: the first thread's trace file damaged (bits flipped, cut, runs of
  zeros or noise, PSBs where none belong, stretches repeated or moved);
- ``module``: the program's ELF file damaged (section and segment headers that
  lie, bytes of its symbol, unwind and debug sections garbled, cut).

A trace or module mutant needs a bundle that names it: ``bundle_naming``
writes one beside it, from the seed named in the mutant's file name.
"""

import json
import random
import struct
from pathlib import Path

from .hostile_inputs import PSB, copy_seed, first_module, only_thread_trace

SEEDS = ("crash", "threads", "missing-module", "overflow", "timestamps", "static")
SEPARATOR = "~"  # between a mutant's number and its seed's name in its file name
_NUMBERS = (0, 1, -1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(2**63), 0x7FFFFFFFF000)
_HUGE = "\u0000a number of 4301 digits"  # written into the text after json.dumps
_STRINGS = ("", "\udcff", "x" * 5000, "/dev/zero", "/", "/proc/self/mem", "../../../../etc/passwd", "nul\x00byte")
_ELF_SECTIONS = (
    ".text", ".eh_frame", ".eh_frame_hdr", ".symtab", ".strtab", ".dynsym", ".dynstr", ".debug_info", ".debug_line",
    ".debug_abbrev", ".debug_str", ".rela.plt", ".plt", ".got", ".note.gnu.build-id",
)  # fmt: skip
_SECTION_FIELDS = {"sh_name": (0, "<I"), "sh_type": (4, "<I"), "sh_addr": (16, "<Q"), "sh_offset": (24, "<Q"),
                   "sh_size": (32, "<Q"), "sh_link": (40, "<I"), "sh_entsize": (56, "<Q")}  # fmt: skip
_SEGMENT_FIELDS = {"p_type": (0, "<I"), "p_flags": (4, "<I"), "p_offset": (8, "<Q"), "p_vaddr": (16, "<Q"),
                   "p_filesz": (32, "<Q"), "p_memsz": (40, "<Q")}  # fmt: skip


def prepare_seeds(folder):
    """``{name: bundle path}`` of every seed, copied into ``folder`` with absolute paths."""
    seeds = {}
    for name in SEEDS:
        bundle = copy_seed(name, Path(folder) / name)
        document = json.loads(bundle.read_text())
        _absolute(document, bundle.parent)
        bundle.write_text(json.dumps(document, indent=1))
        seeds[name] = bundle
    return seeds


def _absolute(document, base):
    for process in document["processes"]:
        for thread in process.get("threads", []):
            if "iptTrace" in thread:
                thread["iptTrace"] = str(base / thread["iptTrace"])
        for module in process.get("modules", []):
            if "file" in module:
                module["file"] = str(base / module["file"])
    for cpu in document.get("cpus", []):
        for key in ("iptTrace", "contextSwitchTrace"):
            if key in cpu:
                cpu[key] = str(base / cpu[key])


def mutants(kind, seeds, count, seed=0, first=0):
    """``(label, bytes, description)`` of ``kind``'s mutants ``first`` to ``first + count - 1``."""
    make = {"bundle": bundle_mutant, "trace": trace_mutant, "module": module_mutant}[kind]
    names = sorted(seeds)
    for number in range(first, first + count):
        rng = random.Random(f"{kind}:{seed}:{number}")
        name = rng.choice(names)
        data, description = make(seeds[name], rng)
        yield f"{kind}-{seed}-{number}{SEPARATOR}{name}", data, f"{name}: {description}"


# -- the JSON -----------------------------------------------------------------------------------------------------


def bundle_mutant(bundle, rng):
    document = json.loads(bundle.read_text())
    done = [_mutate_node(document, rng) for _ in range(rng.choice((1, 1, 2, 3)))]
    text = json.dumps(document).replace(json.dumps(_HUGE), "9" * 4301)  # too long for Python's int() to make
    if rng.random() < 0.15:
        cut = rng.randrange(len(text))
        text, done = text[:cut], [*done, f"cut at {cut}"]
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        data = bytearray(data)
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        data, done = bytes(data), [*done, f"bit flipped at {at}"]
    return data, "; ".join(done)


def _nodes(value, path=()):
    """Every ``(container, key, path)`` of a JSON document."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield value, key, (*path, key)
        yield from _nodes(child, (*path, key))


def _mutate_node(document, rng):
    container, key, path = rng.choice(list(_nodes(document)))
    where = "/".join(map(str, path))
    action = rng.choice(("number", "number", "string", "type", "remove", "repeat"))
    if action == "remove":
        del container[key]
        return f"removed {where}"
    if action == "repeat" and isinstance(container, list):
        container.insert(key, json.loads(json.dumps(container[key])))
        return f"repeated {where}"
    if action == "number":
        container[key] = rng.choice(_NUMBERS) if rng.random() < 0.8 else rng.choice((10**19, 10**40, _HUGE))
    elif action == "string":
        container[key] = rng.choice(_STRINGS)
    else:
        container[key] = rng.choice((None, True, 1.5, [], {}, [1, 2], {"x": 1}))
    return f"{action} at {where}: {str(container[key]).replace(_HUGE, '9' * 8 + '...')[:40]!r}"


# -- the trace file -----------------------------------------------------------------------------------------------


def trace_mutant(bundle, rng):
    data = bytearray(only_thread_trace(bundle).read_bytes())
    done = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        change = rng.choice(_TRACE_CHANGES)
        done.append(change(data, rng))
    return bytes(data), "; ".join(done)


def _flip(data, rng):
    at = [rng.randrange(len(data)) for _ in range(rng.choice((1, 2, 8, 64)))]
    for k in at:
        data[k] ^= 1 << rng.randrange(8)
    return f"{len(at)} bit(s) flipped from {min(at)}"


def _cut(data, rng):
    at = rng.randrange(len(data))
    del data[at:]
    return f"cut at {at}"


def _run(data, rng):
    at, length = rng.randrange(len(data)), rng.choice((1, 16, 256, 4096, 1 << 20))
    fill = bytes(length) if rng.random() < 0.5 else rng.randbytes(length)
    data[at:at] = fill
    return f"{length} {'zero' if not any(fill) else 'noise'} bytes inserted at {at}"


def _psb(data, rng):
    at = rng.randrange(len(data) + 1)
    data[at:at] = PSB
    return f"a PSB inserted at {at}"


def _repeat(data, rng):
    start = rng.randrange(len(data))
    stretch = bytes(data[start : start + rng.choice((8, 64, 1024))])
    at = rng.randrange(len(data) + 1)
    data[at:at] = stretch * rng.choice((1, 2, 50))
    return f"{len(stretch)} bytes from {start} repeated at {at}"


_TRACE_CHANGES = (_flip, _flip, _cut, _run, _psb, _repeat)


# -- the ELF module -----------------------------------------------------------------------------------------------


def module_mutant(bundle, rng):
    data = bytearray(first_module(bundle).read_bytes())
    done = []
    for _ in range(rng.choice((1, 1, 2))):
        change = rng.choice((_section_header, _section_header, _segment_header, _section_bytes, _module_end))
        done.append(change(data, rng))
    return bytes(data), "; ".join(done)


def _section_header(data, rng):
    header, name = _section(data, rng)
    if header is None:
        return "no such section"
    field = rng.choice(list(_SECTION_FIELDS))
    offset, form = _SECTION_FIELDS[field]
    value = rng.choice(_NUMBERS) % (1 << (8 * struct.calcsize(form)))
    struct.pack_into(form, data, header + offset, value)
    return f"{name} {field} = {value:#x}"


def _segment_header(data, rng):
    phoff, phentsize, phnum = _elf_header(data)[3:6]
    if not phnum:
        return "no segments"
    index = rng.randrange(phnum)
    field = rng.choice(list(_SEGMENT_FIELDS))
    offset, form = _SEGMENT_FIELDS[field]
    value = rng.choice(_NUMBERS) % (1 << (8 * struct.calcsize(form)))
    where = phoff + index * phentsize + offset
    if where + struct.calcsize(form) > len(data):
        return "segment headers out of the file"
    struct.pack_into(form, data, where, value)
    return f"segment {index} {field} = {value:#x}"


def _section_bytes(data, rng):
    header, name = _section(data, rng)
    if header is None:
        return "no such section"
    start, size = struct.unpack_from("<QQ", data, header + 24)
    if not size or start + size > len(data):
        return f"{name} has no bytes"
    for _ in range(rng.choice((1, 4, 32))):
        data[start + rng.randrange(size)] = rng.randrange(256)
    return f"bytes of {name} garbled"


def _module_end(data, rng):
    at = rng.randrange(len(data))
    del data[at:]
    return f"cut at {at}"


def _section(data, rng):
    """``(header offset, name)`` of a section chosen among the interesting ones, read by hand (an earlier
    mutation may have left the file beyond pyelftools)."""
    sections = _sections(data)
    present = [(header, name) for header, name in sections if name in _ELF_SECTIONS]
    return rng.choice(present) if present else (None, None)


def _elf_header(data):
    """``(shoff, shentsize, shnum, phoff, phentsize, phnum, shstrndx)`` of the ELF64 ``data`` (zeros if cut)."""
    if len(data) < 64:
        return (0,) * 7
    (phoff, shoff) = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    return shoff, shentsize, shnum, phoff, phentsize, phnum, shstrndx


def _sections(data):
    shoff, shentsize, shnum, _, _, _, shstrndx = _elf_header(data)
    headers = [shoff + k * shentsize for k in range(shnum) if shoff + (k + 1) * shentsize <= len(data)]
    if shstrndx >= len(headers):
        return []
    names_at = struct.unpack_from("<Q", data, headers[shstrndx] + 24)[0]
    named = []
    for header in headers:
        start = names_at + struct.unpack_from("<I", data, header)[0]
        end = data.find(b"\0", start) if start < len(data) else -1
        named.append((header, bytes(data[start:end]).decode("latin-1") if end >= 0 else ""))
    return named


# -- a bundle that names a mutated file ---------------------------------------------------------------------------


def bundle_naming(path, seeds, kind):
    """A bundle beside the mutant at ``path`` (a trace or module file): its seed's, naming the mutant instead."""
    name = Path(path).name.split(SEPARATOR, 1)[1].split(".", 1)[0]
    document = json.loads(seeds[name].read_text())
    process = document["processes"][0]
    if kind == "trace":
        process["threads"][0]["iptTrace"] = str(path)
    else:
        process["modules"][0]["file"] = str(path)
    bundle = Path(f"{path}.json")
    bundle.write_text(json.dumps(document))
    return bundle
