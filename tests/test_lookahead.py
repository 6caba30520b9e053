"""Lookahead: where a run from the current pc must stop, on hand-assembled code."""

from lldb_trace.capture.live_software.lookahead import Lookahead
from lldb_trace.x86.instructions import Classifier

BASE = 0x401000


def lookahead(code):
    def read(address, size):
        offset = address - BASE
        return code[offset : offset + size] if 0 <= offset < len(code) else b""

    return Lookahead(Classifier(read), read)


def flags(value):
    return lambda name: value if name == "rflags" else 0


NOP, JE_BACK_TO_START = b"\x90", b"\x74\xfa"  # at BASE+4: je back to BASE


def test_straight_line_runs_to_the_next_branch():
    code = NOP * 4 + JE_BACK_TO_START + NOP
    assert lookahead(code).ahead(BASE, flags(0), frozenset()) == [BASE, BASE + 1, BASE + 2, BASE + 3, BASE + 4]


def test_a_branch_is_resolved_and_the_run_goes_on_to_the_next_one():
    code = NOP * 4 + JE_BACK_TO_START + NOP
    taken = lookahead(code).ahead(BASE + 4, flags(1 << 6), frozenset())  # ZF set: back to BASE, round to itself
    assert taken == [BASE + 4, BASE, BASE + 1, BASE + 2, BASE + 3, BASE + 4]
    assert lookahead(code).ahead(BASE + 4, flags(0), frozenset())[:2] == [BASE + 4, BASE + 6]


def test_a_watched_address_ends_the_run_but_not_where_it_starts():
    code = NOP * 4 + JE_BACK_TO_START
    watched = frozenset({BASE, BASE + 2})
    assert lookahead(code).ahead(BASE, flags(0), watched) == [BASE, BASE + 1, BASE + 2]
    assert lookahead(code).ahead(BASE + 4, flags(1 << 6), watched) == [BASE + 4, BASE]


def test_a_loop_of_direct_jumps_stops_where_it_closes():
    assert lookahead(b"\xeb\xfe").ahead(BASE, flags(0), frozenset()) == [BASE, BASE]  # jmp .
    code = b"\x74\x00" + NOP + b"\xeb\xfd"  # je +0; nop; jmp back to the nop
    # From a branch the run stops the first time it reaches the loop, not after a lap.
    assert lookahead(code).ahead(BASE, flags(0), frozenset()) == [BASE, BASE + 2]
