"""Hostile ELF modules: headers that cannot be right are refused in one line, damaged debug data costs only names.

LLDB believes a module's section headers (it dies with SIGFPE on a symbol table whose entries have no
size), pyelftools allocates what a section claims, and a segment may claim gigabytes of ``.bss``.
Crash cases run in child processes, so a regression fails a test instead of killing pytest.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import hostile_inputs
from support.hostile_inputs import executable, writable
from support.lldb22 import needs_lldb_22, run_lldb_22

import lldb_trace.api as pt
from lldb_trace.bundle.loader import BundleError
from lldb_trace.elf_info import ElfInfo

LLDB = Path(sys.executable).parent / "lldb"
CLI = Path(sys.executable).parent / "lldb-trace"

REFUSED = [
    pytest.param(".dynstr", {"sh_size": 1 << 40}, ": its section .dynstr claims 1099511627776 bytes at offset 0x420, "
                 "past the end of the file (17184 bytes)", id="dynstr-past-the-end"),
    pytest.param(".symtab", {"sh_entsize": 0}, " is a damaged (truncated?) ELF file (Expected entry size of section "
                 "'.symtab' to be > 0)", id="symtab-entries-of-no-size"),
    pytest.param(".rela.plt", {"sh_entsize": 0}, " is a damaged (truncated?) ELF file (Expected sh_entsize of "
                 "SHT_RELA section to be 24)", id="rela-plt-entries-of-no-size"),
    pytest.param(".debug_abbrev", {"sh_offset": 1 << 63}, ": its section .debug_abbrev claims 186 bytes at offset "
                 "0x8000000000000000", id="debug-abbrev-far-away"),
]  # fmt: skip


@pytest.mark.parametrize(("section", "fields", "message"), REFUSED)
def test_a_module_with_impossible_section_headers_is_refused_naming_it(tmp_path, section, fields, message):
    bundle = hostile_inputs.module_with_section(tmp_path, section, **fields)
    with pytest.raises(BundleError) as refused:
        pt.open_bundle(bundle)
    assert f"processes[0].modules[0].file: {tmp_path}/modules/crash{message}" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_segment_past_the_end_of_its_file_is_refused(tmp_path):
    bundle = hostile_inputs.module_with_segment(tmp_path, executable, p_filesz=1 << 40)
    with pytest.raises(BundleError, match=r"its segment 3 \(PT_LOAD\) claims 1099511627776 bytes at offset 0x1000"):
        pt.open_bundle(bundle)


def lldb_batch(commands):
    """The pip LLDB in batch mode in a child process, the plugin imported: its CompletedProcess."""
    commands = ["command script import lldb_trace", *commands]
    return subprocess.run([LLDB, "-x", "-b", *[part for c in commands for part in ("-o", c)]],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_trace_load_refuses_the_module_lldb_would_die_on_in_the_pip_lldb(tmp_path):
    bundle = hostile_inputs.module_with_section(tmp_path, ".symtab", sh_entsize=0)
    result = lldb_batch([f"trace load {bundle}", "target list"])
    assert result.returncode >= 0, result.stderr  # not killed by a signal
    assert "damaged (truncated?) ELF file (Expected entry size of section '.symtab' to be > 0)" in result.stderr
    assert "No targets." in result.stdout


@needs_lldb_22
def test_trace_load_refuses_the_module_lldb_would_die_on_in_lldb_22(tmp_path):
    bundle = hostile_inputs.module_with_section(tmp_path, ".dynstr", sh_size=1 << 40)
    result = run_lldb_22(tmp_path, [f"trace load {bundle}", "target list"])
    assert result.returncode >= 0, result.stderr
    assert "its section .dynstr claims 1099511627776 bytes" in result.stderr
    assert "No targets." in result.stdout


DAMAGED_AFTER_LOADING = """
import sys
import lldb
from support.hostile_inputs import first_module, patch_section
from lldb_trace.trace_files import load_trace
from lldb_trace.debugger.postmortem import TargetError, create_targets
debugger = lldb.SBDebugger.Create(False)
bundle = load_trace(sys.argv[1])
patch_section(first_module(bundle.path), ".symtab", sh_entsize=0)  # damaged since it was checked
try:
    create_targets(debugger, bundle)
except TargetError as error:
    print(error)
print(debugger.GetNumTargets(), "targets")
"""


def test_a_module_damaged_after_loading_is_refused_before_lldb_sees_it(tmp_path):
    bundle = hostile_inputs.copy_seed("crash", tmp_path)
    tests = Path(__file__).parent  # python -c imports from its working folder: support.* from here
    result = subprocess.run([sys.executable, "-c", DAMAGED_AFTER_LOADING, bundle],
                            capture_output=True, text=True, timeout=120, cwd=tests)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"LLDB cannot be given module /tmp/lldb-trace-crash-8my2zrhq/crash: {tmp_path}/modules/crash is a damaged "
        "ELF file (Expected entry size of section '.symtab' to be > 0)",
        "0 targets",
    ]


# Bytes of the committed crash program's own sections, each of which made pyelftools raise in the symbolizer
# (TypeError, ValueError: negative seek, ELFParseError, AssertionError) or the call forest (struct.error).
DAMAGED_CONTENTS = [
    pytest.param(".debug_line", 60, b"\x71", id="line-table-file-without-a-name"),
    pytest.param(".eh_frame", 72, b"\x3f", id="unwind-entry-seeking-before-the-file"),
    pytest.param(".debug_abbrev", 179, b"\xf6", id="abbreviations-cut-short"),
    pytest.param(".debug_info", 7, b"\xb3", id="compile-unit-of-unknown-kind"),
    pytest.param(".eh_frame_hdr", 18, b"\x8b", id="unwind-table-pointing-past-its-section"),
]


@pytest.mark.parametrize(("section", "at", "data"), DAMAGED_CONTENTS)
def test_damaged_debug_data_costs_names_or_lines_never_the_trace(tmp_path, section, at, data):
    thread = pt.open_bundle(hostile_inputs.module_with_bytes(tmp_path, section, at, data)).threads[0]
    items = list(thread.items(limit=3000))
    assert [item.function for item in items if item.function == "crash`main"]
    assert all(item.disassembly for item in items if item.address is not None)
    assert thread.locate(0x401154).function_label == "crash`main"
    assert list(thread.call_forest().calls())


@pytest.mark.parametrize("field", [0, 4], ids=["name-size", "description-size"])
def test_a_build_id_note_claiming_gigabytes_is_not_believed(tmp_path, field):
    """Found by the module campaign: pyelftools read (and allocated) whatever a note's sizes claimed."""
    bundle = hostile_inputs.module_with_bytes(tmp_path, ".note.gnu.build-id", field, b"\xff\xff\xff\x7f")
    assert ElfInfo(hostile_inputs.first_module(bundle)).build_id is None  # the damaged note names nothing
    thread = pt.open_bundle(bundle).threads[0]  # and the trace loads as from a program without one
    clean = pt.open_bundle(hostile_inputs.copy_seed("crash", tmp_path / "clean")).threads[0]
    assert thread.locate(0x401154).function_label == "crash`main"
    assert [item.address for item in thread.items()] == [item.address for item in clean.items()]


def test_an_address_that_is_not_a_number_is_a_one_line_error(tmp_path):
    thread = pt.open_bundle(hostile_inputs.copy_seed("crash", tmp_path)).threads[0]
    with pytest.raises(pt.LldbTraceError, match=r"^an address is an int, not str \('0x401154'\)$"):
        thread.locate("0x401154")


READ_BSS = """
import resource, sys
import lldb
debugger = lldb.SBDebugger.Create(False)
debugger.SetAsync(False)
interpreter = debugger.GetCommandInterpreter()
for command in ("command script import lldb_trace", f"trace load {sys.argv[1]}", "memory read -c 16 0x404020",
                "memory read -c 16 0x80404020"):
    result = lldb.SBCommandReturnObject()
    interpreter.HandleCommand(command, result)
    assert result.Succeeded(), (command, result.GetError())
print(result.GetOutput().strip())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def test_a_gigabytes_bss_is_refused_in_lldb_without_being_allocated(tmp_path):
    """A writable segment's bytes are no value of any position (test_unknown_values.py); its size costs nothing."""
    bundle = hostile_inputs.module_with_segment(tmp_path, writable, p_memsz=3 << 30)  # static char big[3 << 30]
    hostile_inputs.patch_section(hostile_inputs.first_module(bundle), ".bss", sh_size=3 << 30)
    result = subprocess.run([sys.executable, "-c", READ_BSS, bundle], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    shown, peak = result.stdout.splitlines()[-2:]  # after what the routed trace load printed
    assert shown == "" and "memory at 0x80404020, in crash`big" not in result.stderr
    assert "memory at 0x80404020" in result.stderr and "(.bss) is not known at this position" in result.stderr
    assert int(peak) < 1 << 30, f"reading 16 bytes of .bss peaked at {int(peak) >> 20} MiB"


def test_a_code_segment_claiming_gigabytes_dumps_in_little_memory(tmp_path):
    bundle = hostile_inputs.module_with_segment(tmp_path, executable, p_memsz=3 << 30)
    with open(tmp_path / "out", "w+") as out:
        child = subprocess.Popen([CLI, "dump", bundle, "-i", "-c", "3"], stdout=out, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(child.pid, 0)
        out.seek(0)
        shown = out.read()
    assert os.waitstatus_to_exitcode(status) == 0, shown
    assert len(re.findall(r"^  \[\d+\] ", shown, re.M)) == 3, shown  # three items
    assert usage.ru_maxrss * 1024 < 1 << 30, f"dumping 3 instructions peaked at {usage.ru_maxrss >> 10} MiB"


def test_a_module_file_is_parsed_once_per_version(tmp_path):
    module = hostile_inputs.first_module(hostile_inputs.copy_seed("crash", tmp_path))
    first = ElfInfo.read(module)
    assert ElfInfo.read(module) is first
    content = module.read_bytes()
    module.unlink()
    module.write_bytes(content)  # another file at the same path: read again
    assert ElfInfo.read(module) is not first
    assert ElfInfo.read(module).build_id == first.build_id
