"""A masked store (test_traces/src/masked_store.c: AVX2 ``vpmaskmovd``) writes the lanes its mask names of an area
whose address is known.  ``pt find --write`` gave no address for it ("where or how far they reach is not
known") and a watchpoint went past it to main's older write: ``pt reverse-continue`` stopped at the wrong
write.  It is listed as "may write" with its area now, and a watchpoint stops right after it, saying so.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SOURCES

from lldb_trace import api

pytestmark = pytest.mark.skipif(" avx2 " not in Path("/proc/cpuinfo").read_text(), reason="no AVX2 on this CPU")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("masked_store")
    binary = folder / "masked_store"
    subprocess.run(["gcc", "-O2", "-g", "-no-pie", "-o", str(binary), str(SOURCES / "masked_store.c")],
                   check=True)  # fmt: skip
    command = [str(Path(sys.executable).parent / "lldb-trace"), "record", "-o", str(folder / "rec"), "--"]
    subprocess.run([*command, str(binary)], check=True, capture_output=True, timeout=300)
    return folder / "rec" / "trace.json"


def _store(thread):
    values = thread.values()
    (position,) = [i for i, pc in enumerate(values.addresses) if values._effect(pc).mnemonic == "vpmaskmovd"]
    return position


def test_a_masked_store_is_listed_with_its_area_as_one_that_may_have_written(recorded):
    (thread,) = api.open_bundle(recorded).threads
    watched = thread.registers_at(_store(thread))["rdi"]
    newest = thread.find(write=watched, size=4)[0]
    assert (newest.position, newest.exact, newest.address, newest.size) == (_store(thread), False, watched, 32)
    assert newest.new[:4] == (7).to_bytes(4, "little")  # what the end core says it holds after


def test_a_watchpoint_stops_right_after_the_masked_store_not_at_an_older_write(session, recorded):
    session.ok(f"trace load {recorded}")
    (thread,) = api.open_bundle(recorded).threads
    store = _store(thread)
    found = session.ok("pt find --write &watched[0] --size 4")
    assert re.search(rf"^\s*{store}\s+may write 4 bytes at 0x[0-9a-f]+: \S+ -> 0x00000007$", found, re.M), found
    session.ok("watchpoint set variable watched[4]")  # a lane the mask left alone: 0 before and after
    report = session.ok("pt reverse-continue")
    assert f"instruction {store + 1} of" in report, report
    assert "(the instruction may have written them: only the area it reaches is known)" in report
    session.ok("watchpoint delete 1")
    session.ok("pt goto end")
    session.ok("watchpoint set variable watched[0]")
    report = session.ok("pt reverse-continue")
    assert "Watchpoint 2 hit:" in report and f"instruction {store + 1} of" in report, report
    assert "may have written" not in report  # its old and new values say it did write them
    assert session.target.GetProcess().GetSelectedThread().GetFrameAtIndex(0).GetFunction().GetName() == "fill"
    report = session.ok("pt reverse-continue")  # then main's own write
    assert "Watchpoint 2 hit:" in report and "new value: 0x00000001" in report
