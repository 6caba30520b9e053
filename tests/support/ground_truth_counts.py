"""Per-function instruction and call counts computed from a recording's ground truth, independently of lldb_trace.

The ground truth is every address a thread executed (written by the recorder,
not decoded).  Functions come from the modules' ELF symbol tables (pyelftools),
call instructions from capstone: no lldb_trace symbolizer, decoder or call
forest is involved, so profiles and exports can be checked against it.

- ``exclusive[name]``: instructions executed at addresses inside the function's
  symbol (``module`name``); instructions outside every symbol (PLT stubs) are
  counted under ``None``;
- ``calls[name]``: arrivals at the function's first address right after a call
  instruction, or after a call that went through symbol-less stub code (a PLT
  stub and the lazy binder's path are not functions of their own).
"""

import json
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import capstone
from elftools.elf.elffile import ELFFile

from lldb_trace.capture.encoder.ground_truth import GroundTruth


@dataclass
class FunctionTable:
    starts: list  # sorted run-time start addresses
    ends: list
    names: list  # module`name
    segments: list  # (run-time vaddr, file offset, size, path) of executable segments

    def name_at(self, address):
        k = bisect_right(self.starts, address) - 1
        if k >= 0 and address < self.ends[k]:
            return self.names[k], self.starts[k]
        return None, None

    def code_at(self, address, size=16):
        for vaddr, offset, length, path in self.segments:
            if vaddr <= address < vaddr + length:
                with open(path, "rb") as f:
                    f.seek(offset + address - vaddr)
                    return f.read(size)
        return b""


@dataclass
class Counts:
    exclusive: Counter
    calls: Counter
    instructions: int


def function_table(bundle_dir):
    """The functions of every module of the bundle's (first) process, at their run-time addresses."""
    bundle_dir = Path(bundle_dir)
    document = json.loads((bundle_dir / "trace.json").read_text())
    functions, segments = [], []
    for module in document["processes"][0]["modules"]:
        path = bundle_dir / module["file"] if module.get("file") else Path(module["systemPath"])
        if not path.exists():
            continue
        load = int(module["loadAddress"], 0)
        label = Path(module["systemPath"]).name
        with open(path, "rb") as f:
            elf = ELFFile(f)
            loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            bias = load - min(s["p_vaddr"] for s in loads) // 0x1000 * 0x1000
            for s in loads:
                if s["p_flags"] & 1:
                    segments.append((s["p_vaddr"] + bias, s["p_offset"], s["p_filesz"], str(path)))
            for section_name in (".symtab", ".dynsym"):
                table = elf.get_section_by_name(section_name)
                if table is None:
                    continue
                for symbol in table.iter_symbols():
                    if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_value"] and symbol["st_size"]:
                        start = symbol["st_value"] + bias
                        functions.append((start, start + symbol["st_size"], f"{label}`{symbol.name}"))
    functions = sorted(set(functions))
    kept = []
    for function in functions:  # aliases (same start): keep the first name
        if kept and kept[-1][0] == function[0]:
            continue
        kept.append(function)
    return FunctionTable([e[0] for e in kept], [e[1] for e in kept], [e[2] for e in kept], segments)


def ground_truth_counts(bundle_dir, tid, first=0, last=None):
    """Counts over ground-truth instructions ``first``..``last`` (both included; default: all) of ``tid``."""
    bundle_dir = Path(bundle_dir)
    truth = GroundTruth.read(bundle_dir / "ground_truth" / f"{tid}.txt")
    table = function_table(bundle_dir)
    disassembler = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    disassembler.detail = True
    is_call = {}

    def call_instruction(address):
        if address not in is_call:
            found = next(disassembler.disasm(table.code_at(address), address, 1), None)
            is_call[address] = found is not None and found.group(capstone.CS_GRP_CALL)
        return is_call[address]

    addresses = truth.addresses[first : None if last is None else last + 1]
    exclusive, calls = Counter(), Counter()
    calling = False
    previous = None
    for address in addresses:
        name, start = table.name_at(address)
        exclusive[name] += 1
        if previous is not None and call_instruction(previous):
            calling = True
        if name is not None:
            if calling and address == start:
                calls[name] += 1
            calling = False
        previous = address
    return Counts(exclusive, calls, len(addresses))
