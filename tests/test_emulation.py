"""The emulator that predicts a live thread's path, on hand-assembled code (no process, no LLDB).

The programs the live recorder meets are tested in test_live_software_paths.py against
ptrace single steps; here each rule about where a prediction must end is checked in isolation.
"""

import pytest

from lldb_trace.capture.live_software import emulation
from lldb_trace.capture.process_view import Mapping

CODE, SHARED, STACK = 0x401000, 0x402000, 0x7FF000
# mov ecx, 5; xor eax, eax; loop: add eax, ecx; dec ecx; jnz loop; syscall
LOOP = bytes.fromhex("b905000000" "31c0" "01c8" "ffc9" "75fa" "0f05")  # fmt: skip
LOOP_TOP, SYSCALL = CODE + 7, CODE + 13
# mov ecx, 1; mov eax, [SHARED]; ret
READS_SHARED = bytes.fromhex("b9010000008b0425" + SHARED.to_bytes(4, "little").hex() + "c3")


def predictor(code):
    memory = {CODE: code.ljust(4096, b"\xcc"), SHARED: bytes(4096), STACK: bytes(4096)}
    return emulation.Predictor(lambda address, size: memory.get(address, b"")[:size])


MAPPINGS = [
    Mapping(CODE, CODE + 4096, "r-xp", 0, "/bin/program"),
    Mapping(SHARED, SHARED + 4096, "rw-s", 0, "/dev/shm/shared"),
    Mapping(STACK, STACK + 4096, "rw-p", 0, "[stack]"),
]


def registers(**values):
    return dict.fromkeys(emulation.LOADED, 0) | {"rip": CODE, "rsp": STACK + 2048} | values


def steps(prediction):
    return [CODE, *prediction.steps()]


def test_a_prediction_runs_the_loop_and_ends_before_the_system_call():
    prediction = predictor(LOOP).predict(registers(), MAPPINGS, frozenset())
    loop = [LOOP_TOP, LOOP_TOP + 2, LOOP_TOP + 4]
    assert steps(prediction) == [CODE, CODE + 5, *loop * 5, SYSCALL]
    assert prediction.end == SYSCALL and prediction.arrivals == 1 and prediction.instructions == 17
    assert prediction.registers["rax"] == 15 and prediction.registers["rcx"] == 0
    assert prediction.registers["rip"] == SYSCALL and prediction.registers["rflags"] & 0x40  # ZF


def test_a_watched_address_is_never_run():
    prediction = predictor(LOOP).predict(registers(), MAPPINGS, frozenset({LOOP_TOP + 2}))
    assert steps(prediction) == [CODE, CODE + 5, LOOP_TOP, LOOP_TOP + 2]
    assert prediction.registers["rax"] == 5 and prediction.registers["rcx"] == 5


def test_a_shared_mapping_is_not_read_ahead():
    prediction = predictor(READS_SHARED).predict(registers(), MAPPINGS, frozenset())
    assert steps(prediction) == [CODE, CODE + 5] and prediction.registers["rcx"] == 1
    assert predictor(READS_SHARED).predict(registers(rip=CODE + 5), MAPPINGS, frozenset()) is None


def test_out_of_time_a_loop_is_cut_where_the_thread_passes_least_and_registers_are_emulated_again(monkeypatch):
    monkeypatch.setattr(emulation, "MAX_BLOCKS", 3)
    prediction = predictor(LOOP).predict(registers(), MAPPINGS, frozenset())
    # Blocks: [mov .. jnz], [add, dec, jnz], [add, dec, jnz]: cut before the third, at the loop's top,
    # which the thread passes three times (after xor, and after each jnz).
    assert prediction.end == LOOP_TOP and prediction.arrivals == 3
    assert steps(prediction) == [CODE, CODE + 5, *[LOOP_TOP, LOOP_TOP + 2, LOOP_TOP + 4] * 2, LOOP_TOP]
    assert prediction.registers["rax"] == 9 and prediction.registers["rcx"] == 3


@pytest.mark.parametrize(
    "mnemonic, operands, predictable",
    [
        ("add", "eax, 1", True), ("movq", "xmm0, rax", True), ("rep movsb", "", True), ("lock cmpxchg", "", True),
        ("tzcnt", "eax, ecx", True), ("movq", "mm0, rax", False), ("paddd", "mm1, mm2", False),
        ("syscall", "", False), ("int3", "", False), ("rdtsc", "", False), ("cpuid", "", False), ("fld", "", False),
        ("vpxor", "xmm1, xmm1, xmm1", False), ("xsavec", "", False),
    ],
)  # fmt: skip
def test_what_the_emulator_may_run(mnemonic, operands, predictable):
    assert bool(emulation.is_predictable(mnemonic, operands)) is predictable


def test_registers_match_on_values_and_on_the_flags_a_program_computes():
    expected = {"rax": 1, "rflags": 0x246}
    assert emulation.matches(expected, {"rax": 1, "rflags": 0x346})  # TF, set by single-stepping, is ignored
    assert not emulation.matches(expected, {"rax": 1, "rflags": 0x206})  # ZF differs
    assert not emulation.matches(expected, {"rax": 2, "rflags": 0x246})


def test_vector_registers_and_the_thread_pointer_are_loaded():
    # movq rax, xmm1; mov rbx, fs:[8]; jmp .+2 (ends the block: one holding the syscall is never run); syscall
    code = bytes.fromhex("66480f7ec8" "64488b1c2508000000" "eb00" "0f05")  # fmt: skip
    memory = predictor(code)
    memory.read_memory = lambda address, size, read=memory.read_memory: (
        bytes(8) + (0xFEED).to_bytes(8, "little") + bytes(4080) if address == STACK else read(address, size)
    )
    state = registers(xmm1=(0xABC << 64) | 0x1234, fs_base=STACK)
    prediction = memory.predict(state, MAPPINGS, frozenset())
    assert prediction.end == CODE + 16 and prediction.registers["rax"] == 0x1234
    assert prediction.registers["rbx"] == 0xFEED
