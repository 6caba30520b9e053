"""The known states a bundle names are used only where they hold: a core taken inside a REP string instruction,
a start state of another moment, and a loaded trace saved again with its states."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import HISTORY, SOURCES

from lldb_trace import api
from lldb_trace.values.core_file import open_core
from lldb_trace.values.process_values import ValuesError

lldb = pytest.importorskip("lldb")


@pytest.fixture(scope="module")
def rep_fault(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rep_fault")
    binary = folder / "rep_fault"
    source = SOURCES / "rep_fault.c"
    subprocess.run(["gcc", "-O0", "-g", "-static", "-no-pie", "-o", str(binary), str(source)], check=True)
    recorder = Path(sys.executable).parent / "lldb-trace"
    subprocess.run([str(recorder), "record", "-o", str(folder / "rec"), "--", str(binary)], capture_output=True,
                   timeout=300)  # fmt: skip
    return folder / "rec" / "trace.json"


def test_a_core_inside_a_rep_instruction_gives_no_value_of_what_it_changed(rep_fault):
    """The core holds rcx = 0x1000 (half the copy done); before the `rep movsb` rcx was 0x2000."""
    trace = api.open_bundle(rep_fault)
    thread = trace.threads[0]
    core = open_core(trace.bundle.processes[0].core_file).threads[0].registers
    assert core["rcx"] == 0x1000
    before = thread.registers_at(thread.item_count)  # the thread stands at the rep movsb, not yet done
    assert before["rcx"] in (None, 0x2000)
    assert before["rsi"] in (None, core["rsi"] - 0x1000) and before["rdi"] in (None, core["rdi"] - 0x1000)
    assert thread.values().conflicts == 0


def test_a_start_state_of_another_moment_is_refused(tmp_path):
    folder = tmp_path / "gradebook"
    shutil.copytree(HISTORY / "gradebook", folder)
    bundle = json.loads((folder / "trace.json").read_text())
    bundle["processes"][0]["startCoreFile"] = "cores/end.core"  # the end, named as the start
    (folder / "trace.json").write_text(json.dumps(bundle))
    thread = api.open_bundle(folder / "trace.json").threads[0]
    with pytest.raises(ValuesError, match=r"is not where the trace of thread \d+ starts"):
        thread.registers_at(100)


def test_a_loaded_trace_saved_again_keeps_its_states(session, tmp_path):
    session.ok(f"trace load {HISTORY / 'gradebook' / 'trace.json'}")
    session.ok(f"trace save {tmp_path / 'again'}")
    saved = json.loads((tmp_path / "again" / "trace.json").read_text())["processes"][0]
    assert (tmp_path / "again" / saved["coreFile"]).exists() and (tmp_path / "again" / saved["startCoreFile"]).exists()
    session.ok(f"trace load {tmp_path / 'again' / 'trace.json'}")
    session.ok("pt goto 168")
    assert session.ok("p student->count").strip() == "(int) 4"


def test_a_known_state_gone_since_the_load_is_named_as_the_file_that_cannot_be_read(session, tmp_path):
    """The core deleted after ``trace load``: the save said "cannot write <the core's path>", the file it reads."""
    folder = tmp_path / "gradebook"
    shutil.copytree(HISTORY / "gradebook", folder)
    session.ok(f"trace load {folder / 'trace.json'}")
    (folder / "cores" / "end.core").unlink()
    session.handle(f"trace save {tmp_path / 'again'}")
    error = session.streams()[1]
    assert f"cannot read {folder / 'cores' / 'end.core'} to copy it into the bundle: No such file" in error, error
    assert not (tmp_path / "again").exists()
