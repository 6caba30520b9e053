"""Values of single instructions and short pieces of code: the fast paths and integer rules against unicorn, what
an instruction may change, what a branch says, xsave areas and vector copies (the engine's parts that the stepped
programs of test_value_recovery.py exercise only as a whole).
"""

import random
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from lldb_trace.values import integer_ops, rules
from lldb_trace.values.emulator import Emulator
from lldb_trace.values.machine_state import TRACKED, MachineState
from lldb_trace.values.recovery import ThreadValues
from lldb_trace.values.registers import COUNT, MASK64, RAX, RCX, RDI, RDX, RFLAGS, RIP, RSP
from lldb_trace.values.semantics import decode

# -- the fast paths against unicorn ------------------------------------------------------------------------------

FAST_PATHS = [
    "4883c008",
    "4883e810",
    "4801d8",
    "4829d8",
    "4831d8",
    "4821d8",
    "4809d8",
    "4839d8",
    "4885d8",
    "48ffc0",
    "48ffc8",
    "48f7d8",
    "48f7d0",
    "4889d8",
    "89d8",
    "88d8",
    "88fc",
    "480fb6c3",
    "480fbec3",
    "4863c3",
    "0fb7c3",
    "488d440b08",
    "488d0c5b",
    "8d4301",
    "6689d8",
    "4c01c0",
    "01d8",
    "29d8",
    "83c001",
    "31c0",
    "4831c0",
]


@pytest.mark.parametrize("code", FAST_PATHS)
def test_fast_paths_compute_what_unicorn_computes(code):
    import capstone

    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    cs.detail = True
    effect = decode(0x401000, bytes.fromhex(code), cs)
    emulator, generator = Emulator(), random.Random(code)
    for _ in range(20):
        state = {n: generator.choice((0, 1, MASK64, 1 << 63, generator.getrandbits(64))) for n in range(COUNT)}
        state[RFLAGS] = 0x202 | generator.choice((0, 0x8D5, 0x1, 0x40))
        fast, _ = rules.forward(effect, state.get, lambda access: None)
        everything = frozenset(range(COUNT)) - {RIP}
        # named as an instruction whose flags unicorn may give (emulator.FLAGS_DEFINED), so they are compared too
        exact = emulator.run(replace(effect, kind="generic", reads=everything, mnemonic="adc"), state.get, {})
        assert exact is not None
        for register, value in fast.items():
            if register == RFLAGS:
                value, expected = value & 0x8D5, exact[0].get(RFLAGS, state[RFLAGS]) & 0x8D5
            else:
                expected = exact[0].get(register, state[register])
            assert value == expected, f"{code}: register {register}: {value:#x} != {expected:#x}"


# shl/shr/sar/rol/ror by imm, 1 and cl, 8 to 64 bits and ah; imul of two and three operands; memory destinations
INTEGER_OPS = [
    "48c1e005", "c1e005", "66c1e005", "c0e005", "48d1e0", "48d3e0", "d3e8", "48c1f83f", "c1f805", "c0f803",
    "48c1c00d", "c1c80d", "66c1c003", "c0c805", "48d3c8", "c0ec04", "480fafc3", "0fafc3", "660fafc3",
    "4869c3ffffffff", "6bc3f9", "486bc3f9", "4869c3b179379e", "c164240803", "48c164240805", "d3642408",
]  # fmt: skip


@pytest.mark.parametrize("code", INTEGER_OPS)
def test_integer_ops_compute_what_unicorn_computes(code):
    """integer_ops computes these instead of unicorn: the same destination, whatever the inputs (counts of 0 and
    past the width included), and no flags (unicorn's are dropped for them too)."""
    effect = decode(0x401000, bytes.fromhex(code), _cs())
    assert effect.kind == "generic"
    emulator, generator = Emulator(), random.Random(code)
    for _ in range(40):
        state = {n: generator.choice((0, 1, MASK64, 1 << 63, generator.getrandbits(64))) for n in range(COUNT)}
        state[RCX] = generator.choice((0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 255, generator.getrandbits(64)))
        state[RSP] = 0x7FFF0000
        loads = {k: generator.getrandbits(8 * size) for k, (kind, _, size) in enumerate(effect.accesses) if kind == "r"}
        fast = integer_ops.compute(effect, state.get, loads)
        exact = emulator.run(effect, state.get, loads)
        assert fast is not None and exact is not None
        regs, stores = fast
        if RFLAGS in regs:  # a count of 0: nothing changed, the flags neither (unicorn's flags are dropped)
            assert regs.pop(RFLAGS) == state[RFLAGS]
        for register in exact[0].keys() - regs.keys():  # and a 32-bit register it left: unicorn zero-extends it
            assert exact[0][register] == state[register] & 0xFFFFFFFF != state[register], (code, register)
        assert regs == {r: exact[0][r] for r in regs} and stores == exact[1], f"{code} with rcx {state[RCX]:#x}"


# cmpxchg whose destination shares rax with the accumulator (ah, al, ax, eax, rax) or not, and ah compared with itself
COMPARE_EXCHANGES = ["0fb0dc", "0fb0e4", "0fb0d8", "660fb1d8", "0fb1d8", "480fb1d8", "480fb1cb", "0fb1cb"]


@pytest.mark.parametrize("code", COMPARE_EXCHANGES)
def test_a_compare_exchange_computes_what_the_cpu_does_and_nothing_its_inputs_do_not_give(code):
    """integer_ops' cmpxchg against unicorn, equal and not, with every input known and with the source not known.
    A failed ``cmpxchg ah, bl`` wrote al, then ah over the rax from before it (al back to its old value); one into
    eax whose source was not known kept the old accumulator as rax's value: both shown as known, and wrong.
    (A 32-bit one that succeeds leaves rax whole on the CPU, where unicorn zero-extends it: the module doc.)"""
    effect = _effect(code)
    emulator, generator = Emulator(), random.Random(code)
    (number, shift, width), source = effect.operands[0].reg, effect.operands[1].reg[0]
    for trial in range(60):
        state = {n: generator.getrandbits(64) for n in range(COUNT)}
        if trial % 2:  # the accumulator equals the destination
            mask = (1 << width) - 1
            state[RAX] = (state[RAX] & ~mask) | (state[number] >> shift) & mask
        exact = emulator.run(effect, state.get, {})
        assert exact is not None
        if trial % 2 and width == 32 and number != RAX:
            exact[0][RAX] = state[RAX]
        without_source = {**state, source: None} if source != RAX else state
        for known in (state.get, without_source.get):
            regs, _ = integer_ops.compute(effect, known, {})
            for register, value in regs.items():
                if register != RFLAGS:
                    assert value == exact[0].get(register, state[register]), (code, trial, register)


# bzhi, bextr, pdep, pext of 64 and 32 bits, each with its destination rax, source rcx and control or mask rdx
BIT_FIELDS = {
    ("bzhi", 64): "c4e2e8f5c1", ("bzhi", 32): "c4e268f5c1", ("bextr", 64): "c4e2e8f7c1", ("bextr", 32): "c4e268f7c1",
    ("pdep", 64): "c4e2f3f5c2", ("pdep", 32): "c4e273f5c2", ("pext", 64): "c4e2f2f5c2", ("pext", 32): "c4e272f5c2",
}  # fmt: skip
_BIT_FIELDS_C = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  for (int k = 1; k + 2 < argc; k += 3) {
    unsigned long long a = strtoull(argv[k + 1], 0, 0), b = strtoull(argv[k + 2], 0, 0);
    unsigned long long r;
    switch (argv[k][0]) {
      case 'z': r = _bzhi_u64(a, b); break;   case 'Z': r = _bzhi_u32(a, b); break;
      case 'x': r = __bextr_u64(a, b); break; case 'X': r = __bextr_u32(a, b); break;
      case 'd': r = _pdep_u64(a, b); break;   case 'D': r = _pdep_u32(a, b); break;
      case 't': r = _pext_u64(a, b); break;   default: r = _pext_u32(a, b); break;
    }
    printf("%llu\n", r);
  }
  return 0;
}
"""


def test_bit_fields_are_the_cpus(tmp_path):
    """bzhi, bextr, pdep and pext computed as this machine's CPU computes them, indexes past the operand included:
    unicorn's bzhi of 64 bits by 64 cleared the top bit (0x7fff... where the CPU gives all ones), its 32-bit
    bextr read source bits past 31 and its 32-bit pdep left bits past 31."""
    if "bmi2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has no BMI2 to compare with")
    program = tmp_path / "bit_fields"
    source = tmp_path / "bit_fields.c"
    source.write_text(_BIT_FIELDS_C)
    subprocess.run(["gcc", "-O1", "-mbmi", "-mbmi2", "-o", str(program), str(source)], check=True)
    generator, letters = random.Random(7), {"bzhi": "zZ", "bextr": "xX", "pdep": "dD", "pext": "tT"}
    emulator = Emulator()
    cases = []
    for (name, width), code in BIT_FIELDS.items():
        edges = [0, 1, 31, 32, 33, 63, 64, 65, 255, 0x2020, 0x1F20, 0x4010, 0xFFFF, MASK64]
        for control in edges + [generator.getrandbits(64) for _ in range(8)]:
            for source in (MASK64, 0x8000000000000001, generator.getrandbits(64)):
                cases.append((name, width, code, source, control))
    words = [f"{letters[name][width == 32]} {source} {control}" for name, width, _, source, control in cases]
    answers = subprocess.run([program, *" ".join(words).split()], capture_output=True, text=True, check=True)
    for (name, width, code, source, control), truth in zip(cases, answers.stdout.split(), strict=True):
        state = {RAX: 0x5A5A5A5A5A5A5A5A, RCX: source, RDX: control}
        effect = _effect(code)  # as chunk.py asks: integer_ops first, unicorn for what it leaves
        regs, _ = integer_ops.compute(effect, state.get, {}) or emulator.run(effect, state.get, {})
        assert regs[RAX] == int(truth), f"{name} {width}: {source:#x}, {control:#x}: {regs[RAX]:#x} != {int(truth):#x}"


# -- what one instruction may change, and what a branch says ------------------------------------------------------

CODE_AT = 0x401000


def _cs():
    import capstone

    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    cs.detail = True
    return cs


def _effect(code):
    return decode(CODE_AT, bytes.fromhex(code), _cs())


@pytest.mark.parametrize(
    ("code", "offset", "word"),
    [
        ("480fab07", 130, 0x1010),  # bts [rdi], rax: bit 130 is in the third qword
        ("480fab07", MASK64, 0xFF8),  # -1: the top bit of the qword before
        ("0fab07", 33, 0x1004),  # bts [rdi], eax
        ("0fab07", 0xFFFFFFFF, 0xFFC),  # eax -1 (rax's upper half aside)
        ("660fbb07", 0x10010, 0x1002),  # btc [rdi], ax: ax is 0x10 (the upper bits aside)
        ("0fba2746", 0, 0x1000),  # bt dword [rdi], 70: an immediate offset stays in the operand
    ],
)
def test_a_bit_test_of_memory_touches_the_word_its_offset_picks(code, offset, word):
    effect = _effect(code)
    state = {RDI: 0x1000, RAX: offset}
    assert {area.address(state.get) for _, area, _ in effect.accesses} == {word}


@pytest.mark.parametrize(
    ("code", "partial"),
    [
        ("62f17e497f0f", True),  # vmovdqu32 [rdi]{k1}, zmm1: the mask picks the elements written
        ("c4e26d2e0f", True),  # vmaskmovps [rdi], ymm2, ymm1
        ("62f27d498b0f", True),  # vpcompressd [rdi]{k1}, zmm1: as many as the mask has bits
        ("62f17e487f0f", False),  # vmovdqu32 [rdi], zmm1: all 64 bytes
        ("0f2b07", False),  # movntps [rdi], xmm0
    ],
)
def test_a_masked_store_may_leave_bytes_of_its_area_alone(code, partial):
    """pt find lists such a store as one that may have written the bytes, not as their exact writer."""
    effect = _effect(code)
    assert "w" in [kind for kind, _, _ in effect.accesses] and effect.partial == partial


def test_a_movbe_store_writes_the_swapped_bytes():
    """The emulator's write hook sees the register's value before movbe swaps it: the bytes are read back."""
    state = {RAX: 0x01020304, RDI: 0x5000}
    store = _effect("0f38f14701")  # movbe [rdi + 1], eax
    assert Emulator().run(store, state.get, {1: 0xAAAAAAAA}) == ({}, {0: 0x04030201})


@pytest.mark.parametrize("code", ["480fc1c8", "f0480fc10f", "0fc0c8"])  # xadd rax, rcx; lock xadd [rdi], rcx; al, cl
def test_flags_written_from_unknown_flags_stay_unknown(code):
    """xadd sets the status flags and keeps the others (DF, AC, ID: a program may set them): with rflags unknown
    before it, rflags after it is not known either.  It was 0x202 after a std (truth 0x602)."""
    state = {RAX: 5, RCX: 7, RDI: 0x5000}
    regs, _ = Emulator().run(_effect(code), state.get, {0: 3, 1: 3})
    assert RFLAGS not in regs and RCX in regs
    known = {**state, RFLAGS: 0x602}  # known before: the status flags it computes, the others kept
    assert Emulator().run(_effect(code), known.get, {0: 3, 1: 3})[0][RFLAGS] & ~0x8D5 == 0x602


def test_pushf_stores_no_known_word():
    """Single-stepped (lldb-trace record, pt start --backend software), pushf pushes TF set, which the flags ptrace
    reports leave out: the word it stores was shown 0x246 where the program popped 0x346."""
    state = {RFLAGS: 0x246, RSP: 0x7000}
    assert rules.forward(_effect("9c"), state.get, {}.get) == ({RSP: 0x6FF8}, {})  # pushfq


def test_an_address_size_prefix_computes_the_address_in_32_bits():
    """``[ebx + ecx*4]`` wraps at 4 GiB, the registers' upper halves aside; ``[eip + 16]`` decodes (it raised
    KeyError); ``lea rax, [ebx + 8]`` ties rax to no register (it was taken for rbx + 8)."""
    state = {1: 0xDEAD0000FFFFFFF0, 2: 0xBEEF000000000007, RAX: 0}  # rbx, rcx
    (load,) = _effect("678b048b").accesses  # mov eax, [ebx + ecx*4]
    assert load[1].address(state.get) == 0xC
    assert _effect("678b0510000000") is not None  # mov eax, [eip + 16]
    lea = _effect("67488d4308")
    assert rules.relations(lea) == []
    assert rules.forward(lea, state.get, lambda access: None)[0] == {RAX: 0xFFFFFFF8}


@pytest.mark.parametrize(
    ("code", "writes", "stores", "barrier"),
    [
        ("c5fb93c0", {"rax"}, [], False),  # kmovd eax, k0: the mask register is not tracked, eax is
        ("62f17548fec2", set(), [], False),  # vpaddd zmm0, zmm1, zmm2: vector registers only (xmm0 is written)
        ("f20f11442408", set(), [(8, 8)], False),  # movsd [rsp+8], xmm0: SSE, not the string instruction
        ("df7c2408", set(), [(8, 8)], False),  # fistp qword [rsp+8]: an x87 store (capstone says read)
        ("d97c2408", set(), [(8, 2)], False),  # fnstcw [rsp+8]: outside capstone's FPU group
        ("0fae442440", set(), [(0x40, 512)], False),  # fxsave: 512 bytes
        ("62f27d49a00488", set(), [], True),  # vpscatterdd: no one address
        ("0fa5c2", {"rdx", "rflags"}, [], False),  # shld edx, eax, cl: computed (unicorn)
        ("0fae5c2408", set(), [(8, 4)], False),  # stmxcsr [rsp+8] (capstone says read)
        ("c5f8ae5c2408", set(), [(8, 4)], False),  # vstmxcsr [rsp+8] (capstone says read)
        ("480fc3442408", set(), [(8, 8)], False),  # movnti [rsp+8], rax (capstone says read)
        ("dd742408", set(), [(8, 108)], False),  # fnsave [rsp+8]: 108 bytes (capstone says 4)
        ("f0480fc74c2408", {"rax", "rdx", "rflags"}, [(8, 16)], False),  # lock cmpxchg16b: not every register
        ("0fc74c2408", {"rax", "rdx", "rflags"}, [(8, 8)], False),  # cmpxchg8b [rsp+8]
        ("660fc8", {"rax"}, [], False),  # bswap ax: capstone 5 gives its operand no access (the result is undefined)
    ],
)
def test_what_an_instruction_may_change(code, writes, stores, barrier):
    effect = _effect(code)
    assert {TRACKED[number] for number in effect.writes if number < len(TRACKED)} == writes
    assert [(ref.disp, size) for kind, ref, size in effect.accesses if kind == "w"] == stores
    assert effect.barrier == barrier


def _run(program, registers, memory=None, trace=None, xcr0=None):
    """The pieces of ``program`` (hex codes, laid out from CODE_AT) that ``trace`` lists (all, in order, by default)
    run once; the end state after the last one: ``registers`` (names) and ``memory`` ({address: bytes})."""
    code, starts = b"", []
    for piece in program:
        starts.append(CODE_AT + len(code))
        code += bytes.fromhex(piece)

    def read_code(address, size):
        return code[address - CODE_AT : address - CODE_AT + size] if CODE_AT <= address < CODE_AT + len(code) else b""

    def read_memory(address, size):
        for start, data in (memory or {}).items():
            if start <= address < start + len(data):
                return data[address - start : address - start + size]
        return b""

    addresses = [starts[i] for i in (trace if trace is not None else range(len(program)))]
    end = MachineState(registers, read_memory, xcr0)
    return ThreadValues(addresses, read_code, end=end, end_after_last=True)


@pytest.mark.parametrize(("jump", "zero"), [("7402", True), ("7502", False)])
def test_a_je_taken_says_the_tested_register_was_zero(jump, zero):
    # test rcx, rcx; je/jne +2 (taken: over the two nops); nop; nop; mov ecx, 1
    values = _run(["4885c9", jump, "90", "90", "b901000000"], {"rcx": 1}, trace=[0, 1, 4])
    assert values.registers_at(0)["rcx"] == (0 if zero else None)  # a jne taken only says rcx was not 0
    assert values.conflicts == 0


def test_an_instruction_reading_no_register_is_not_the_zero_idiom():
    """``add qword [rip + 0x10], 1`` reads only memory: it is not ``xor r, r``, whose result is 0 whatever r
    held (the engine once stored 0 there)."""
    counter = CODE_AT + 8 + 0x10
    values = _run(["4883051000000001", "90"], {"rflags": 0x202}, {counter: (0x56).to_bytes(8, "little")})
    assert values.memory_at(0, counter, 8) == ((0x55).to_bytes(8, "little"), b"\xff" * 8)


def test_a_compare_the_trace_shows_equal_relates_both_registers():
    # cmp rax, rbx; jne +5 not taken; mov ebx, 7: rax == rbx before the mov
    values = _run(["4839d8", "7505", "bb07000000"], {"rax": 0x1234, "rbx": 7})
    assert values.registers_at(0)["rbx"] == 0x1234


def test_an_xsave_writes_a_bounded_area_when_its_components_are_known():
    stack, far = 0x7FFF0000, 0x7FFF2000
    memory = {stack: bytes(range(256)) * 64}  # 16 KiB from rsp: the end state's stack
    loaded = memory[stack][0x2000:0x2008]
    registers = {"rsp": stack, "rbx": int.from_bytes(loaded, "little")}
    # mov eax, 0xee; xor edx, edx; xsavec [rsp+0x40]; mov rbx, [rsp+0x2000]
    program = ["b8ee000000", "31d2", "0fc7642440", "488b9c2400200000"]
    values = _run(program, registers, memory)
    assert values.memory_at(0, far, 8) == (loaded, b"\xff" * 8)  # beyond the area: kept
    assert values.memory_at(0, stack + 0x40, 8)[1] == bytes(8)  # what xsavec wrote: unknown before it
    assert values.conflicts == 0
    # without eax and edx the area's size is unknown: a barrier
    values = _run(program[2:], registers, memory)
    assert values.memory_at(0, far, 8)[1] == bytes(8)


@pytest.mark.parametrize(
    ("xcr0", "area"),
    [(None, 576 + 256 + 64 + 64 + 512 + 1024), (0x2E7, 576 + 256 + 64 + 512 + 1024)],  # AMD Zen 4's XCR0: no MPX
)
def test_an_xsavec_writes_only_the_components_asked_for_and_enabled(xcr0, area):
    """glibc's lazy-binding resolver saves components 0xee with xsavec just below the stack slots it reads next."""
    stack = 0x7FFF0000
    memory = {stack: bytes(range(256)) * 16}
    # mov eax, 0xee; xor edx, edx; xsavec [rsp+0x40]; nop
    values = _run(["b8ee000000", "31d2", "0fc7642440", "90"], {"rsp": stack}, memory, xcr0=xcr0)
    written, kept = stack + 0x40 + area - 8, stack + 0x40 + area
    assert values.memory_at(2, written, 8)[1] == bytes(8)
    assert values.memory_at(2, kept, 8) == (memory[stack][kept - stack : kept - stack + 8], b"\xff" * 8)


def test_values_travel_through_vector_register_copies():
    stack, data = 0x7FFF0000, bytes(range(0x40, 0x50))
    # movdqu xmm1, [rsp]; movdqu [rsp+0x10], xmm1: the copy's source, from what the end state holds at its target
    values = _run(["f30f6f0c24", "f30f7f4c2410"], {"rsp": stack}, {stack + 0x10: data})
    assert values.memory_at(0, stack, 16) == (data, b"\xff" * 16)
    # pxor xmm0, xmm0; movaps [rsp], xmm0: zeros, with no memory in the end state at all
    values = _run(["660fefc0", "0f290424"], {"rsp": stack})
    assert values.memory_at(2, stack, 16) == (bytes(16), b"\xff" * 16)
    assert values.conflicts == 0


def test_ymm_and_zmm_copies_carry_every_lane():
    stack, data = 0x7FFF0000, bytes(range(0x40, 0x60))
    # vmovdqu ymm1, [rsp]; vmovdqu [rsp+0x20], ymm1: both lanes of the source, from the end state at the target
    values = _run(["c5fe6f0c24", "c5fe7f4c2420"], {"rsp": stack}, {stack + 0x20: data})
    assert values.memory_at(0, stack, 32) == (data, b"\xff" * 32)
    assert values.conflicts == 0


def test_upper_lanes_follow_the_encoding():
    stack, data = 0x7FFF0000, bytes(range(0x80, 0xC0))
    known = {stack + 0x80: data}  # the end state knows 64 bytes at rsp+0x80, nothing else
    # vmovdqu xmm2, [rsp]; vmovdqu [rsp+0x40], ymm2: a VEX write of xmm2 zeroes its upper lanes
    values = _run(["c5fa6f1424", "c5fe7f542440"], {"rsp": stack}, known)
    assert values.memory_at(2, stack + 0x50, 16) == (bytes(16), b"\xff" * 16)
    assert values.memory_at(2, stack + 0x40, 16)[1] == bytes(16)
    # vmovdqu64 zmm1, [rsp+0x80]; movdqu xmm1, [rsp+0x100]; vmovdqu [rsp+0x140], ymm1: legacy SSE keeps lane 1
    values = _run(["62f1fe486f4c2402", "f30f6f8c2400010000", "c5fe7f8c2440010000"], {"rsp": stack}, known)
    assert values.memory_at(3, stack + 0x150, 16) == (data[16:32], b"\xff" * 16)
    assert values.memory_at(3, stack + 0x140, 16)[1] == bytes(16)
    # vmovdqu64 zmm1 and zmm17 from [rsp+0x80]; vzeroupper; vmovdqu [rsp+0x140], ymm1; vmovdqu64 [rsp+0xc0], zmm17:
    # vzeroupper clears lanes 1..3 of zmm0..zmm15 and keeps zmm16..zmm31
    program = ["62f1fe486f4c2402", "62e1fe486f4c2402", "c5f877", "c5fe7f8c2440010000", "62e1fe487f4c2403"]
    values = _run(program, {"rsp": stack}, known)
    assert values.memory_at(5, stack + 0x140, 32) == (data[:16] + bytes(16), b"\xff" * 32)
    assert values.memory_at(5, stack + 0xC0, 64) == (data, b"\xff" * 64)
    assert values.conflicts == 0


def test_masked_vector_loads_are_not_copies():
    effect = _effect("62e1fe496f0c24")  # vmovdqu64 zmm17{k1}, [rsp]: the unselected lanes keep their values
    assert effect.kind == "opaque"
    assert len({number for number in effect.writes if number >= COUNT}) == 4  # every lane of zmm17 unknown
