"""Where a traced thread may have started a thread that shares its memory (values/thread_creation.py): a system
call's number and ``clone``'s flags from the instructions just before it, run from nothing known."""

import capstone
import pytest

from lldb_trace.values.semantics import decode
from lldb_trace.values.thread_creation import first_creation, number_and_flags

BASE = 0x401000
SYSCALL = "0f05"
MOV_EAX, MOV_EDI = "b8", "bf"  # mov eax, imm32; mov edi, imm32
SPILL_THROUGH_FRAME = "554889e548897df8488b45f8"  # push rbp; mov rbp, rsp; mov [rbp-8], rdi; mov rax, [rbp-8]


def _imm(opcode, value):
    return opcode + value.to_bytes(4, "little").hex()


def _first_creation(*pieces, recorded=None):
    """Run ``pieces`` (hex instructions) once each from BASE, as a trace: the first creation's position."""
    code = bytes.fromhex("".join(pieces))
    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    cs.detail = True
    addresses = [insn.address for insn in cs.disasm(code, BASE)]

    def read_code(address, size):
        return code[address - BASE : address - BASE + size]

    def effect_at(position):
        return decode(addresses[position], read_code(addresses[position], 15), cs)

    def call_at(position):
        return number_and_flags(position, effect_at, lambda p: False, lambda p: (recorded or {}).get(p))

    calls = [position for position, address in enumerate(addresses) if read_code(address, 2) == bytes.fromhex(SYSCALL)]
    return first_creation(call_at, calls)


@pytest.mark.parametrize(
    ("flags", "creates"),
    [
        (0x01200011, False),  # fork: CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
        (0x003D0F00, True),  # pthread_create's: CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD...
        (0x00004111, False),  # vfork's: CLONE_VM | CLONE_VFORK, the parent waits until the child leaves the memory
    ],
)
def test_clone_creates_a_thread_by_its_flags(flags, creates):
    position = _first_creation(_imm(MOV_EDI, flags), _imm(MOV_EAX, 56), SYSCALL)
    assert position == (2 if creates else None)


def test_clone3_and_an_unknown_number_may_create_one():
    assert _first_creation(_imm(MOV_EAX, 435), SYSCALL) == 1
    assert _first_creation("4889d8", SYSCALL) == 1  # mov rax, rbx: the number is not known


def test_calls_that_create_none_are_passed():
    assert _first_creation(_imm(MOV_EAX, 39), SYSCALL, _imm(MOV_EAX, 1), SYSCALL, "31c0", SYSCALL) is None  # read


def test_a_number_spilled_to_the_stack_is_read_back():
    """An ``-O0`` wrapper stores its argument in its frame and loads it into rax."""
    assert _first_creation(_imm(MOV_EDI, 39), SPILL_THROUGH_FRAME, SYSCALL) is None
    assert _first_creation(_imm(MOV_EDI, 435), SPILL_THROUGH_FRAME, SYSCALL) == 5


def test_the_frame_is_forgotten_where_a_store_may_alias_it_or_the_stack_pointer_is_not_followed():
    spill = _imm(MOV_EDI, 39) + "4883ec1048893c24"  # sub rsp, 16; mov [rsp], rdi
    assert _first_creation(spill, "488b0424", SYSCALL) is None  # mov rax, [rsp]
    assert _first_creation(spill, "488903", "488b0424", SYSCALL) is not None  # mov [rbx], rax first
    assert _first_creation(spill, "4883e4f0", "488b0424", SYSCALL) is not None  # and rsp, -16 first


def test_the_registers_a_recorder_saw_are_taken():
    assert _first_creation("4889d8", SYSCALL, recorded={1: {"rax": 39, "rdi": 0}}) is None
    assert _first_creation(_imm(MOV_EAX, 39), SYSCALL, recorded={1: {"rax": 435, "rdi": 0}}) == 1


def test_a_number_set_long_before_is_followed_back_through_moves():
    """A loop's ``syscall`` whose number was put in r13 before the loop, and moved into rax at each call: the
    instructions just before it do not give it (it counted as a possible clone, and as a possible rt_sigreturn,
    every register lost), the moves back to the constant do; a write of part of r13 between them does not."""
    number_in_r13 = "41bd" + (39).to_bytes(4, "little").hex()  # mov r13d, 39 (getpid)
    far, move = ["90"] * 100, "4c89e8"  # 100 nops; mov rax, r13
    assert _first_creation(number_in_r13, *far, move, SYSCALL) is None
    assert _first_creation(number_in_r13, *far, "4180c501", move, SYSCALL) == 103  # add r13b, 1


def test_the_kernel_reads_a_call_numbers_low_32_bits():
    """``movabs rax, 0x100000038`` then ``syscall`` is clone (56): it was taken for an unknown call."""
    clone_vm = _imm(MOV_EDI, 0x100)  # CLONE_VM
    assert _first_creation(clone_vm, "48b83800000001000000", SYSCALL) == 2
    assert _first_creation(clone_vm, "48b82700000001000000", SYSCALL) is None  # getpid, so


def test_asynchronous_io_set_up_in_the_trace_makes_memory_shared():
    """io_uring_setup and io_setup: the kernel completes their requests into any buffer later, during unrelated
    calls; a ring set up and torn down within the trace is in no core (all variants showed a buffer's old
    bytes after the read that filled it had been queued)."""
    assert _first_creation(_imm(MOV_EAX, 425), SYSCALL) == 1  # io_uring_setup
    assert _first_creation(_imm(MOV_EAX, 206), SYSCALL) == 1  # io_setup


def test_a_number_is_not_followed_back_past_a_call_that_may_restore_every_register():
    """rt_sigreturn on a frame the program made loads r13 (and every register) from it: a number moved from r13
    after it is not the constant r13 held before it."""
    number_in_r13 = "41bd" + (39).to_bytes(4, "little").hex()  # mov r13d, 39 (getpid)
    sigreturn = [_imm(MOV_EAX, 15), SYSCALL]
    assert _first_creation(number_in_r13, *sigreturn, *["90"] * 100, "4c89e8", SYSCALL) == 104
