"""Hostile raw trace files: what a file holds or claims never crashes the debugger or grows its memory.

A crash case runs in a child process, so a regression shows as a failed test, not a dead pytest.
"""

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from support import hostile_inputs
from support.lldb22 import needs_lldb_22, run_lldb_22

import lldb_trace.api as pt

LLDB = Path(sys.executable).parent / "lldb"
CLI = Path(sys.executable).parent / "lldb-trace"

# A buffer whose last bytes are a PSB and whose next page is unmapped: libipt 2.0.5's PSB search reads the
# byte after such a buffer, so without the guard in libipt/config.py both directions die with SIGSEGV.
UNMAPPED_AFTER = """
import ctypes, mmap
from lldb_trace import libipt
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
page = mmap.PAGESIZE
start = libc.mmap(None, 2 * page, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
libc.munmap(start + page, page)
buffer = (ctypes.c_uint8 * page).from_address(start)
buffer[page - 16 :] = bytes.fromhex("0282") * 8
for direction in ("sync_backward", "sync_forward"):
    with libipt.PacketDecoder(libipt.Config(buffer)) as decoder:
        getattr(decoder, direction)()
        print(direction, decoder.sync_offset)
"""


def run_python(code, *args, nofile=None):
    """``code`` run by this Python in a child process (with at most ``nofile`` open files): its CompletedProcess."""

    def limit():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit)  # fmt: skip


def test_libipt_never_reads_the_unmapped_byte_after_a_trace_ending_in_a_psb():
    result = run_python(UNMAPPED_AFTER)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["sync_backward", "4080", "sync_forward", "4080"]


DUMP_THE_END = """
import sys
import lldb_trace.api as pt
thread = pt.open_bundle(sys.argv[1]).threads[0]
print(thread.process_trace.end_of(thread.tid, 10).decoded.instruction_count, thread.decoded.instruction_count)
"""


@pytest.mark.parametrize("size", [2 << 20, 3 << 20])
def test_a_trace_whose_only_psb_is_its_last_bytes_loads_in_the_api_and_the_cli(tmp_path, size):
    bundle = hostile_inputs.trace_ending_in_its_only_psb(tmp_path, size)
    api = run_python(DUMP_THE_END, bundle)
    assert (api.returncode, api.stdout.split()) == (0, ["0", "0"]), api.stderr
    cli = subprocess.run([CLI, "dump", bundle, "-i", "-c", "3"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert "(no items)" in cli.stdout


def test_a_trace_whose_only_psb_is_its_last_bytes_loads_in_the_pip_lldb(tmp_path):
    bundle = hostile_inputs.trace_ending_in_its_only_psb(tmp_path)
    commands = ["command script import lldb_trace", f"trace load {bundle}", "thread trace dump instructions -c 3"]
    result = subprocess.run([LLDB, "-x", "-b", *[part for c in commands for part in ("-o", c)]],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "(no items)" in result.stdout


@needs_lldb_22
def test_a_trace_whose_only_psb_is_its_last_bytes_loads_in_lldb_22(tmp_path):
    bundle = hostile_inputs.trace_ending_in_its_only_psb(tmp_path)
    result = run_lldb_22(tmp_path, [f"trace load {bundle}", "thread trace dump instructions -c 3"])
    assert result.returncode == 0, result.stderr
    assert "(no items)" in result.stdout


MEMORY_OF_A_WHOLE_DECODE = """
import sys
import lldb_trace.api as pt

def rss():
    status = open("/proc/self/status").read()
    return int(status.split("VmRSS:")[1].split()[0]) * 1024

trace = pt.open_bundle(sys.argv[1])
trace.processes[0].workers = 1  # one process: its memory is all there is to measure
before = rss()
decoded = trace.threads[0].decoded
print(decoded.instruction_count, decoded.error_count, rss() - before)
"""


def test_a_sparse_trace_of_zeros_costs_no_memory_to_decode(tmp_path):
    size = 128 << 20  # zeros (PAD packets) between four copies of the crash trace
    bundle = hostile_inputs.sparse_trace_with_psbs(tmp_path, size, psbs=4)
    result = run_python(MEMORY_OF_A_WHOLE_DECODE, bundle)
    assert result.returncode == 0, result.stderr
    instructions, _errors, grown = map(int, result.stdout.split())
    once = pt.open_bundle(hostile_inputs.copy_seed("crash", tmp_path / "once")).threads[0].decoded
    assert instructions == 4 * once.instruction_count  # the zeros between the copies are nothing
    assert grown < 32 << 20, f"decoding {size >> 20} MiB of zeros grew memory by {grown >> 20} MiB"


OPEN_EVERY_THREAD = """
import sys
import lldb_trace.api as pt
trace = pt.open_bundle(sys.argv[1])
counts = {thread.decoded.instruction_count for thread in trace.threads}
print(len(trace.threads), len(counts), len({id(process.code) for process in trace.processes}))
"""


def test_hundreds_of_threads_decode_under_a_small_open_files_limit(tmp_path):
    bundle = hostile_inputs.many_processes(tmp_path, 100, seed="threads")  # 400 threads, 100 processes
    result = run_python(OPEN_EVERY_THREAD, bundle, nofile=64)
    assert result.returncode == 0, result.stderr
    threads, _counts, codes = map(int, result.stdout.split())
    assert threads == 400
    assert codes == 1  # the processes load the same modules: one code memory and image for all


def test_the_processes_of_a_bundle_share_what_their_modules_give(tmp_path):
    bundle = hostile_inputs.many_processes(tmp_path, 3, seed="crash")
    document = json.loads(bundle.read_text())
    document["processes"][2]["modules"][0]["loadAddress"] = "0x500000"
    bundle.write_text(json.dumps(document))
    trace = pt.open_bundle(bundle)
    first, second, moved = trace.processes
    assert first.code is second.code and first.code is not moved.code
    assert [thread.item(0).function for thread in trace.threads[:2]] == ["crash`main"] * 2
    assert trace.threads[2].locate(0x501154).function_label == "crash`main"  # the moved copy, at its own address
