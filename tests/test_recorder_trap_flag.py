"""A single-stepping recorder's trap flag is not the program's (values/registers.TRAP_FLAG).

Under ptrace, the kernel shows the recorder's TF in rflags from the instruction after a popf on (it takes the TF
as the program's then): `lldb-trace record`'s register states showed rflags 0x302 where the program's was 0x202,
and the flags rules, carrying the program's TF through `adc`, disagreed with them: every value of the thread was
withdrawn (test_traces/src/popf_flags.c).
"""

import pytest
from support.recordings import record_program

from lldb_trace import api


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return record_program(tmp_path_factory.mktemp("popf_flags"), "popf_flags.c")


def test_the_recorders_trap_flag_is_neither_shown_nor_a_conflict(recorded):
    (thread,) = api.open_bundle(recorded).threads
    flags = [thread.registers_at(position)["rflags"] for position in range(thread.item_count)]
    assert 0x203 in flags and not any(value & 0x100 for value in flags if value is not None)
    rsp = thread.registers_at(0)["rsp"]
    _, mask = thread.read_memory_at(0, rsp, 8)  # solves the windows: no StatesDisagreeError
    assert mask == b"\xff" * 8
