"""BranchEvaluator on hand-assembled branches: operands computed from registers and memory.

The real-process check (every jcc against ptrace single steps) is in test_live_software_paths.py;
these cover operand forms that compiled test programs rarely produce.
"""

import pytest

from lldb_trace.x86.branches import BranchEvaluator

CODE_AT = 0x401000


def evaluator(code, memory=None):
    memory = memory or {}

    def read(address, size):
        if address == CODE_AT:
            return code
        return memory.get(address, b"")[:size]

    return BranchEvaluator(read)


REGISTERS = {"rax": 0x1000, "rbx": 0x20, "rsp": 0x7FF0, "rflags": 0, "rdx": 0x5555}


def registers(name):
    if name not in REGISTERS:
        raise LookupError(name)
    return REGISTERS[name]


@pytest.mark.parametrize(
    ("code", "memory", "expected"),
    [
        (b"\xc3", {0x7FF0: (0x402000).to_bytes(8, "little")}, 0x402000),  # ret: [rsp]
        (b"\xff\xe2", {}, 0x5555),  # jmp *%rdx
        (b"\xff\xd0", {}, 0x1000),  # call *%rax
        # jmp *8(%rax,%rbx,8)
        (b"\xff\x64\xd8\x08", {0x1000 + 0x20 * 8 + 8: (0x403000).to_bytes(8, "little")}, 0x403000),
        (b"\xff\x25\x10\x00\x00\x00", {CODE_AT + 6 + 0x10: (0x404000).to_bytes(8, "little")}, 0x404000),  # rip-relative
        (b"\x74\x10", {}, CODE_AT + 2),  # je, ZF clear: falls through
        (b"\x75\x10", {}, CODE_AT + 2 + 0x10),  # jne, ZF clear: taken
    ],
)
def test_successor_from_registers_and_memory(code, memory, expected):
    assert evaluator(code, memory).successor(CODE_AT, registers) == expected


@pytest.mark.parametrize(
    "code",
    [
        b"\xe2\xfe",  # loop: decrements rcx first; stepped instead
        b"\xe3\x10",  # jrcxz
        b"\x64\xff\x24\x25\x00\x00\x00\x00",  # jmp *%fs:0: segment base unknown here
        b"\xff\xe1",  # jmp *%rcx, a register the debugger did not give
        b"\xc3",  # ret with unreadable stack
        b"\x0f\x05",  # syscall: not a branch it evaluates
    ],
)
def test_what_cannot_be_evaluated_exactly_is_left_to_a_single_step(code):
    assert evaluator(code).successor(CODE_AT, registers) is None
