"""Instructions whose address or operand size is not what their registers suggest (test_traces/src/
addressing_forms.S): ``lea`` with a segment override (no base added), ``mov gs, ax`` (a new base), an
address-size prefix on a vector copy, ``rep movsb`` and ``bts`` (ebx and edi, not rbx and rdi) and ``leave``
with an operand-size prefix (2 bytes popped into bp).  Each showed wrong values from the end core alone, or from
both cores: 14 and 21 registers, 17 memory bytes.  Now none, against the recorder's registers at every position.
"""

import subprocess
import sys

import pytest
from support.paths import SOURCES

from lldb_trace import api
from lldb_trace.values.recovery import ThreadValues


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The program recorded from its first instruction: the recovery with every register the recorder saw."""
    folder = tmp_path_factory.mktemp("addressing_forms")
    binary = folder / "addressing_forms"
    source = SOURCES / "addressing_forms.S"
    subprocess.run(["gcc", "-nostdlib", "-static", "-o", str(binary), str(source)], check=True, capture_output=True)
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "--from-start", "-o", str(folder / "rec"), "--"]
    result = subprocess.run([*command, str(binary)], capture_output=True, text=True, timeout=300)
    assert "killed by SIGSEGV" in result.stdout + result.stderr
    return api.open_bundle(folder / "rec" / "trace.json").threads[0].values()


@pytest.mark.parametrize("known", ["the end core", "both cores and the system calls' results"])
def test_no_wrong_value_through_unusual_addressing(recorded, known):
    seen = recorded
    more = {"start": seen.start, "syscalls": seen.syscalls} if known != "the end core" else {}
    alone = ThreadValues(seen.addresses, seen._read_code, end=seen.end, end_after_last=seen.end_after_last, **more)
    shown = 0
    for position in range(seen.count + 1):
        truth = seen.registers_at(position)
        for name, value in alone.registers_at(position).items():
            if value is not None and truth[name] is not None:
                shown += 1
                assert value == truth[name], (position, name, hex(value), hex(truth[name]))
    assert shown > 700 and alone.conflicts == 0
