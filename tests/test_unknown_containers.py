"""A container or std::string whose links or characters are not known at a position shows as not known.

LLDB's libstdc++ formatters walk std::map's and std::list's links and read a
std::string's characters; where a read fails they go on with what they got.
In test_traces/src/containers.cpp's recording (every known state kept) a
map of three showed its first element three times, a list of three ``size=0
{}`` and a string of 35 characters its first 16, all as if known, in both
LLDBs and in the IDE's variables.  Where every link and character is known
(the end, its core) they show as LLDB shows them.
"""

import pytest
from support.lldb22 import needs_lldb_22, run_lldb_22
from support.recordings import record_program

from lldb_trace import api

NAMES = ("squares", "recent", "text", "numbers", "names", "both_ends")
STEP = 1499  # positions looked at: every STEP-th


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return record_program(tmp_path_factory.mktemp("containers"), "containers.cpp", "g++", ("-O0", "-g"))


@pytest.fixture(scope="module")
def unproven(bundle, tmp_path_factory):
    """``[(position, main's frame index, {name: first unknown address})]`` where LLDB's formatter shows a value of
    NAMES that the position does not prove, and the pip LLDB's output of ``frame variable`` there."""
    pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")
    from support.lldb_session import Session

    from lldb_trace.dap.inspection import value_text
    from lldb_trace.debugger.known_containers import unproven_container
    from lldb_trace.debugger.known_strings import unproven_string

    session = Session(tmp_path_factory.mktemp("session"))
    found = []
    try:
        session.ok(f"trace load {bundle}")
        thread = session.target.GetProcess().GetSelectedThread()
        for position in range(STEP, api.open_bundle(bundle).threads[0].item_count, STEP):
            session.ok(f"pt goto {position}")
            frame = next((frame for frame in thread if frame.GetFunctionName() == "main"), None)
            values = {name: frame.FindVariable(name) for name in NAMES} if frame is not None else {}
            unknown = {
                name: unproven_container(session.target, value) or unproven_string(session.target, value)
                for name, value in values.items()
            }
            unknown = {  # where LLDB shows one (as it would a known one): the case to mend
                name: address
                for name, address in unknown.items()
                if address is not None and values[name].GetError().Success() and values[name].GetSummary()
            }
            if unknown:
                session.ok(f"frame select {frame.GetFrameID()}")
                session.ok(f"frame variable {' '.join(unknown)}")
                shown = {name: value_text(values[name]) for name in unknown}
                found.append((position, frame.GetFrameID(), unknown, shown))
        out, _ = session.streams()
    finally:
        session.close()
    assert found, "every link and character is known at every position looked at: use a recording that knows less"
    return found, out


def test_the_variables_show_them_as_not_known(unproven):
    found, out = unproven
    for _, _, unknown, _ in found:
        for name, address in unknown.items():
            assert f" {name} = <not known at this position (memory at {address:#x})>\n" in out
    assert "size=0 {}" not in out


def test_the_ide_shows_them_as_not_known(unproven):
    found, _ = unproven
    for _, _, unknown, shown in found:
        assert shown == {
            name: f"<not known at this position (memory at {address:#x})>" for name, address in unknown.items()
        }


@needs_lldb_22
def test_in_lldb_22(bundle, unproven, tmp_path):
    position, frame, unknown, _ = unproven[0][0]
    commands = [
        f"trace load {bundle}",
        f"pt goto {position}",
        f"frame select {frame}",
        f"frame variable {' '.join(unknown)}",
    ]
    out = run_lldb_22(tmp_path, commands).stdout
    for name, address in unknown.items():
        assert f" {name} = <not known at this position (memory at {address:#x})>\n" in out


def test_known_at_the_end_they_show_as_lldb_shows_them(session, bundle):
    session.ok(f"trace load {bundle}")
    session.ok("frame select 1")  # main, which called crash()
    shown = session.ok(f"frame variable {' '.join(NAMES)}")
    squares = "".join(
        f'  [{k}] = (first = {key}, second = "{key // 3 * 7}")\n' for k, key in enumerate((0, 6, 9, 12, 15))
    )
    assert f"squares = size=5 {{\n{squares}}}\n" in shown
    assert "recent = size=5 {\n" + "".join(f"  [{k}] = {1005 - k}\n" for k in range(5)) + "}\n" in shown
    assert 'text = "hi' + "".join(f"{chr(97 + i)}XYZWVUTSRQ" for i in range(6)) + '"\n' in shown
