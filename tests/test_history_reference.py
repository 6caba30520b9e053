"""Time travel against GDB: every committed GDB answer about the reference programs, replayed.

test_traces/history/NAME/ holds a recorded bundle of a small program and, in gdb.json, what
GDB 13's ``record full`` answered to sequences of reverse and forward commands on the same run
(capture_gdb.py; see test_traces/history/README.md).  replay.py asks lldb_trace.history the same
questions from the same positions and lists every disagreement: position, frames, the end of
history, breakpoint stops, refusals.  No GDB runs here.

The non-local control flow (longjmp, a caught exception, a tail call, swapcontext, a signal
handler) is also checked directly on the frames and the call forest.
"""

import json
from functools import cache

import pytest
from support.paths import HISTORY
from support.trace_scripts import replay


@cache
def program(name):
    return replay.Program(name, replay.load_reference(name))


def sequences():
    for name in replay.program_names():
        for index, sequence in enumerate(json.loads((HISTORY / name / "gdb.json").read_text())["sequences"]):
            yield pytest.param(name, index, id=f"{name}/{sequence['name'].replace(' ', '-')}")


def test_every_program_has_gdbs_answers():
    names = {path.name for path in HISTORY.iterdir() if (path / "trace.json").is_file()}
    assert names == set(replay.program_names())
    assert {"recursion", "longjmp", "exceptions", "tailcall", "contexts", "signal_handler", "gradebook"} <= names


@pytest.mark.parametrize(("name", "index"), list(sequences()))
def test_sequence_agrees_with_gdb(name, index):
    reference = program(name)
    result = reference.replay(reference.reference["sequences"][index])
    assert result.checked
    assert not result.problems, "\n".join(result.problems)
    assert not result.stale, f"known disagreements that now agree (drop them from expected_fixed.py): {result.stale}"


# -- non-local control flow, straight from the frames ----------------------------------------------


def sequence_start(name, sequence_name):
    """The position GDB started the named sequence from, and GDB's frames there."""
    found = next(s for s in program(name).reference["sequences"] if s["name"] == sequence_name)
    return found["start"]["position"], found["start"]["frames"]


def frame_names(name, position):
    reference = program(name)
    return [name for name, _ in reference.our_frames(reference.history(), position)]


def calls_of(name, function):
    """The call-forest rows of every call of ``function``, with their depth (main is depth 0)."""
    reference = program(name)
    forest = reference.thread.call_forest()
    entries = set(reference.symbolizer.function_entries(function))
    return [call for call in forest.calls() if call.address in entries]


def test_after_a_longjmp_main_is_alone_and_its_later_calls_one_level_down():
    position, _ = sequence_start("longjmp", "after the longjmp")
    assert frame_names("longjmp", position) == ["after", "main"]
    [after] = calls_of("longjmp", "after")
    assert after.depth == 1
    level6 = calls_of("longjmp", "level6")[0]
    assert level6.depth == 6 and level6.left_non_locally
    assert frame_names("longjmp", level6.last + 1) == ["main"]  # where the longjmp landed


def test_after_a_caught_exception_main_is_alone_and_its_later_calls_one_level_down():
    position, _ = sequence_start("exceptions", "in the handler")
    assert frame_names("exceptions", position) == ["main"]
    [after] = calls_of("exceptions", "_Z5afteri")
    assert after.depth == 1
    [thrower] = calls_of("exceptions", "_Z2f5i")
    assert thrower.depth == 5 and thrower.left_non_locally


def test_a_tail_call_replaces_the_frame():
    position, gdb_frames = sequence_start("tailcall", "inside leaf")
    assert [frame["type"] for frame in gdb_frames] == ["normal", "tailcall", "normal", "normal"]
    assert frame_names("tailcall", position) == ["leaf", "outer", "main"]
    assert all(call.tail_call for call in calls_of("tailcall", "leaf"))


def test_a_switched_context_shows_its_own_stack():
    position, _ = sequence_start("contexts", "in the task")
    assert frame_names("contexts", position) == ["task"]
    reference = program("contexts")
    assert reference.history().frames_at(position)[-1].outermost_traced
    works = calls_of("contexts", "work")
    assert [frame_names("contexts", call.first) for call in works] == [
        ["work", "task"],
        ["work", "main"],
        ["work", "task"],
    ]
    position, _ = sequence_start("contexts", "back in main")
    assert frame_names("contexts", position) == ["main"]


def test_a_signal_handler_is_an_asynchronous_frame_over_the_interrupted_ones():
    position, gdb_frames = sequence_start("signal_handler", "in the handler")
    reference = program("signal_handler")
    frames = reference.history().frames_at(position)
    names = frame_names("signal_handler", position)
    assert names[:3] == ["note", "on_signal", "__pthread_kill_implementation.constprop.0"]
    assert names[-3:] == ["send", "deliver", "main"]
    assert frames[1].asynchronous and not frames[0].asynchronous
    interrupted = next(frame for frame in gdb_frames if frame["type"] == "sigtramp")
    resumes = gdb_frames[gdb_frames.index(interrupted) + 1]["pc"]
    assert frames[2].pc == resumes  # where the interrupted code resumes, as GDB shows it
    [handler] = calls_of("signal_handler", "on_signal")
    assert handler.asynchronous
    assert frame_names("signal_handler", handler.last + 2)[-3:] == ["send", "deliver", "main"]  # after rt_sigreturn
