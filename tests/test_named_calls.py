"""Calls found by what ran: a call through a PLT stub or an IFUNC'd GOT entry is a call of the stub's name and of
the function it reached, at the same index in ``pt find``, the API, ``--function-calls`` and history breakpoints.

The program (test_traces/src/libcalls.c, recorded at test time) calls libc's strlen and memcpy and libm's cos,
IFUNCs whose variant depends on the CPU, lazily in its first round and through bound GOT entries after.  The
references: the recorder's ground truth (every executed address), GDB 13 counting the executions of the function
each GOT entry was bound to in the live program, and both LLDBs' own ``bt``.  Outer frames stand at their call
instruction, as ``bt`` shows them, and the oldest frame is numbered as ``bt`` numbers it.
"""

import json
import re
import shutil
import subprocess

import pytest
from elftools.elf.elffile import ELFFile
from support.lldb22 import run_lldb_22

import lldb_trace.api as api
from lldb_trace.capture.encoder.ground_truth import GroundTruth

IFUNCS = ("strlen", "memcpy", "cos")
STRLEN_LINE = 21  # size_t n = strlen(text);
POSITION = re.compile(r"Position: instruction (\d+) of")
OLDEST = re.compile(r"frame #(\d+) is the oldest traced frame")
FRAME = re.compile(r"frame #(\d+): (0x[0-9a-f]+)")


@pytest.fixture(scope="module")
def thread(libcalls):
    return api.open_bundle(libcalls[0]).threads[0]


@pytest.fixture
def session(session, libcalls):
    """conftest's in-process LLDB with the recorded libcalls program loaded."""
    session.ok(f"trace load {libcalls[0]}")
    return session


def main_calls_through(thread, name):
    """The calls main made through its PLT stub ``name``, in order."""
    main = next(call for call in thread.call_forest().calls() if thread.locate(call.address).function == "main")
    return [call for call in main.children if call.stub and thread.locate(call.stub).function == name]


def resolver_run(thread, name):
    """The IFUNC resolver's run for ``name`` (ld.so binding the program's first call)."""
    resolvers = set(thread.symbolizer.ifunc_entries(name))
    runs = [call for call in thread.call_forest().calls() if call.address in resolvers]
    assert all(thread.locate(call.address).resolver for call in runs)
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.parametrize("name", IFUNCS)
def test_a_call_through_a_stub_is_a_call_of_its_name_and_of_the_function_it_reached(thread, libcalls, name):
    through = main_calls_through(thread, name)
    assert len(through) == 3 and through[0].lazy_binding and not through[1].lazy_binding
    variant = thread.locate(through[0].address).function
    assert variant != name  # the CPU's variant (__strlen_avx2, __cos_fma...), which the name alone would miss
    found = thread.find(function=name)
    assert [m.index for m in found] == sorted((m.index for m in found), reverse=True)  # newest first
    assert {call.entered for call in through} <= {m.index for m in found}
    at = {thread.item(m.index).address for m in found}  # the variant's entry; ld.so has a memcpy of its own
    assert through[0].address in at and at - {through[0].address} <= set(thread.symbolizer.function_entries(name))
    variant_calls = [m.index for m in found if thread.item(m.index).address == through[0].address]
    assert [m.index for m in thread.find(function=variant)] == variant_calls  # the same calls by either name
    lazy = through[0]
    assert lazy.first < lazy.children[0].first < lazy.entered  # the stub, ld.so's binding, then the function
    # the ground truth: every execution of those entries, and nothing else, is a call found
    truth = GroundTruth.read(libcalls[0].parent / "ground_truth" / f"{thread.tid}.txt").addresses
    assert len(truth) == thread.item_count
    assert [i for i, address in enumerate(truth) if address in at][::-1] == [m.index for m in found]
    # the resolver's own run inside ld.so is a call of the resolver, not of the name
    resolver = resolver_run(thread, name)
    assert resolver.first not in {m.index for m in found}
    assert [m.index for m in thread.find(address=resolver.address)] == [resolver.first]


def test_find_takes_globs_and_survives_addresses_no_trace_can_hold(thread):
    strlen = [m.index for m in thread.find(function="strlen")]
    assert set(strlen) <= {m.index for m in thread.find(function="str*")}
    variant = thread.item(strlen[0]).address
    odd = [2**64 + 5, -1, variant]  # a garbled trace's symbols: no OverflowError, the real entry still found
    assert [m.index for m in thread.history.find(entries=odd)] == strlen


def test_the_dump_lists_the_same_calls_at_the_same_indices(session, thread):
    for name in IFUNCS:
        listed = json.loads(session.ok(f"pt dump --function-calls --all --json --function {name}"))
        assert [shown["id"] for shown in listed][::-1] == [m.index for m in thread.find(function=name)]
        through = [shown for shown in listed if shown["stub"]]  # ld.so also calls a memcpy of its own
        assert len(through) == 3 and all(shown["firstId"] < shown["id"] for shown in through)
        assert {shown["stub"]["symbol"] for shown in through} == {f"symbol stub for: {name}"}
        found = json.loads(session.ok(f"pt find --function {name} -c 0 --json"))
        assert [match["index"] for match in found] == [m.index for m in thread.find(function=name)]
        assert [match["via"] for match in found if match["via"]] == [f"libcalls`symbol stub for: {name}"] * 3
    everything = session.ok("pt dump --function-calls --all")
    assert re.search(rf"\[{resolver_run(thread, 'strlen').first}\] +libc\.so\.6`strlen \(IFUNC resolver\)", everything)


def reverse_stops(outputs):
    """The positions a series of ``pt reverse-continue`` outputs stopped at, and whether each named breakpoint 1.1."""
    return [
        (int(POSITION.search(text).group(1)), "breakpoint 1.1" in text) for text in outputs if POSITION.search(text)
    ]


def test_a_breakpoint_on_the_name_stops_at_the_calls_in_both_lldbs(session, thread, libcalls, tmp_path):
    expected = [(m.index, True) for m in thread.find(function="strlen")]
    session.ok("breakpoint set -n strlen")  # LLDB leaves it on the resolver: it cannot run it in a trace
    outputs = [session.ok("pt reverse-continue") for _ in expected]
    assert reverse_stops(outputs) == expected
    assert "No more reverse-execution history." in session.ok("pt reverse-continue")
    forwards = [session.ok("pt continue") for _ in expected]  # from the beginning of history
    assert reverse_stops(forwards) == expected[::-1]
    if shutil.which("lldb-22"):
        commands = [f"trace load {libcalls[0]}", "breakpoint set -n strlen", *["pt reverse-continue"] * len(expected)]
        done = run_lldb_22(tmp_path, commands)
        assert reverse_stops(done.stdout.split("(lldb) pt reverse-continue")[1:]) == expected, done.stderr


def frame_lines(bt):
    return [(int(number), int(pc, 16)) for number, pc in FRAME.findall(bt)]


def without_register_states(libcalls, folder):
    """A copy of the libcalls bundle without the registers the recorder saw: as a hardware trace has none, most
    registers are unknown inside ld.so, and the frames LLDB shows are the trace's."""
    copy = folder / "bundle"
    shutil.copytree(libcalls[0].parent, copy)
    listed = json.loads((copy / "trace.json").read_text())
    for thread in listed["processes"][0]["threads"]:
        del thread["registerStates"]
    (copy / "trace.json").write_text(json.dumps(listed))
    return copy / "trace.json"


def test_outer_frames_stand_at_their_call_as_bt_shows_them(session, thread, libcalls, tmp_path):
    call = main_calls_through(thread, "strlen")[1]
    frames = thread.stack_at(call.entered)
    main = frames[1]
    assert thread.locate(main.pc).source == f"libcalls.c:{STRLEN_LINE}"  # the calling line, as bt names it
    assert thread.locate(main.pc).mnemonic.startswith("call")
    assert main.resumes_at == thread.item(call.last + 1).address  # where main went on after the call
    assert frames[0].pc == frames[0].resumes_at == call.address
    # main's caller, which the trace (begun in main) only returned into: its call is decoded back from there
    caller = frames[-1]
    assert caller.outermost_traced and caller.resumes_at == thread.call_forest().trees[0].address
    assert thread.locate(caller.pc).mnemonic.startswith("call") and caller.pc < caller.resumes_at <= caller.pc + 7
    session.ok(f"pt goto {call.entered}")
    # every register known (the recorder's register states): LLDB unwinds the stack as in a core, an outer frame at
    # its return address (and past main's caller where the memory there is known)
    shown = frame_lines(session.ok("bt"))
    assert [pc for _, pc in shown][: len(frames)] == [frames[0].pc] + [frame.resumes_at for frame in frames[1:]]
    session.ok(f"trace load {without_register_states(libcalls, tmp_path)}")
    session.ok(f"pt goto {call.entered}")
    shown = frame_lines(session.ok("bt"))
    assert [pc for _, pc in shown] == [frame.pc for frame in frames]
    session.ok("frame select 1")
    session.handle("register read")  # the override writes to the debugger's error stream
    assert f"only frame #0's pc: it resumes at 0x{main.resumes_at:x}" in session.streams()[1]


@pytest.mark.parametrize("lldb_name", ["pip", "lldb-22"])
def test_the_oldest_frame_is_numbered_as_bt_lists_it(session, thread, libcalls, tmp_path, lldb_name):
    """Inside the IFUNC resolver that ld.so's _dl_fixup calls from code inlined into it (with ld.so's debug info:
    pip LLDB 23 adds a frame for _dl_fixup below the inlined elf_ifunc_invoke, LLDB 22 does not)."""
    position = resolver_run(thread, "strlen").first
    if lldb_name == "pip":
        stop = session.ok(f"pt goto {position}")
        bt = session.ok("bt")
    else:
        if shutil.which("lldb-22") is None:
            pytest.skip("Debian's lldb-22 is not installed")
        done = run_lldb_22(tmp_path, [f"trace load {libcalls[0]}", f"pt goto {position}", "bt"])
        stop, bt = done.stdout.split("(lldb) bt")
    numbers = [number for number, _ in frame_lines(bt)]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 4
    # every register is known there: LLDB unwinds on past main's caller, the oldest frame the trace holds
    oldest = int(OLDEST.search(stop).group(1))
    assert f"frame #{oldest}: " in bt and "`__libc_start_call_main" in bt.split(f"frame #{oldest}: ")[1].splitlines()[0]
    assert "libcalls`main" in bt
    if lldb_name == "pip":  # LLDB 22 shows an inlined call site's innermost function alone (no llvm PR 191132)
        assert "ld-linux-x86-64.so.2`_dl_fixup" in bt


def got_slots(program):
    """Where each IFUNC's GOT entry is, relative to main: the program's R_X86_64_JUMP_SLOT relocations."""
    with open(program, "rb") as f:
        elf = ELFFile(f)
        symbols = elf.get_section_by_name(".dynsym")
        main = elf.get_section_by_name(".symtab").get_symbol_by_name("main")[0]["st_value"]
        relocations = elf.get_section_by_name(".rela.plt").iter_relocations()
        slots = {symbols.get_symbol(r["r_info_sym"]).name: r["r_offset"] - main for r in relocations}
    return {name: slots[name] for name in IFUNCS}


@pytest.mark.skipif(shutil.which("gdb") is None, reason="GDB is not installed")
def test_gdb_counts_the_same_calls_of_the_function_each_got_entry_reached(libcalls, thread, tmp_path):
    """GDB runs the program to exit and reads where ld.so bound each name's GOT entry (found with pyelftools); run
    again from main (where the trace begins), it counts the executions of that function's first instruction.
    (GDB 13's own ``break strlen`` stops in the IFUNC's resolver here, as LLDB's does: no reference for that.)"""
    slots = got_slots(libcalls[1])
    script = f"""set pagination off
set confirm off
break *main
run
break exit
continue
python
import json
slots = {slots!r}
bound = {{n: int(gdb.parse_and_eval(f"*(unsigned long *) ((char *) &main + {{slot}})")) for n, slot in slots.items()}}
gdb.execute("delete")
gdb.execute("break *main")
gdb.execute("run")
points = {{n: gdb.Breakpoint(f"*{{address:#x}}") for n, address in bound.items()}}
for point in points.values():
    point.ignore_count = 1 << 30
gdb.execute("continue")
hits = {{n: p.hit_count for n, p in points.items()}}
json.dump({{"bound": bound, "hits": hits}}, open("{tmp_path / "gdb.json"}", "w"))
end
"""
    (tmp_path / "count.gdb").write_text(script)
    subprocess.run(["gdb", "-nx", "-batch", "-x", str(tmp_path / "count.gdb"), str(libcalls[1])],
                   capture_output=True, timeout=300, check=True)  # fmt: skip
    gdb = json.loads((tmp_path / "gdb.json").read_text())
    for name in IFUNCS:
        bound = gdb["bound"][name]
        assert main_calls_through(thread, name)[0].address == bound, name  # the variant the stub reached
        at_variant = [m for m in thread.find(function=name) if thread.item(m.index).address == bound]
        assert gdb["hits"][name] == len(at_variant) >= 3, name
