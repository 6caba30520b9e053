"""Fixtures the test files share: an in-process LLDB, the sample trace, recorded programs, opened scenarios.

Paths and helpers live in tests/support/ (test files import those, never this
file); pytest finds the fixtures here by name.
"""

import json
import os

import pytest

pytest.register_assert_rewrite("support")  # the helpers' asserts explain a failure as a test's own do

from support import trace_scripts  # noqa: E402
from support.libcalls_recording import record_libcalls  # noqa: E402
from support.paths import TRACES  # noqa: E402
from support.sample_trace import SAMPLE  # noqa: E402
from support.scenario_decoding import open_bundle  # noqa: E402

from lldb_trace import libipt  # noqa: E402
from lldb_trace.elf_info import ElfInfo  # noqa: E402

LLDB_BINDINGS = "LLDB's Python bindings: pip install 'lldb-trace[test]'"
SLOW_TESTS = "LLDB_TRACE_SLOW_TESTS"  # "1": also run the tests marked slow (a minute or more each)


def pytest_collection_modifyitems(config, items):
    """The tests marked slow repeat at scale what smaller tests check; CI's budget (15 minutes on a busy
    2-core machine) leaves them to a run by hand with LLDB_TRACE_SLOW_TESTS=1 (docs/testing.md)."""
    if os.environ.get(SLOW_TESTS) == "1":
        return
    skip = pytest.mark.skip(reason=f"slow: {SLOW_TESTS}=1 runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def session(tmp_path):
    """An in-process LLDB with the plugin imported (support/lldb_session.py); skips where LLDB has no bindings."""
    lldb_session = pytest.importorskip("support.lldb_session", reason=LLDB_BINDINGS)
    session = lldb_session.Session(tmp_path)
    yield session
    if session.target.GetProcess().IsValid():
        session.target.GetProcess().Kill()
    session.close()


@pytest.fixture
def live_addresses_kept(monkeypatch):
    """The live recorder keeps every address it recorded, to compare with the decoded trace."""
    from lldb_trace.debugger import live_session

    monkeypatch.setattr(live_session, "KEEP_ADDRESSES", True)


# -- the sample trace ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sample_trace():
    return (SAMPLE / "4242.ipt").read_bytes()


@pytest.fixture(scope="session")
def sample_expected():
    return [int(line, 16) for line in (SAMPLE / "expected_addresses.txt").read_text().split()]


@pytest.fixture(scope="session")
def sample_segments():
    """``(file offset, size, vaddr)`` of the sample binary's executable segments."""
    return [(s.offset, s.size, s.vaddr) for s in ElfInfo(SAMPLE / "sample").segments if s.executable]


@pytest.fixture
def sample_image(sample_segments):
    image = libipt.Image("sample")
    for offset, size, vaddr in sample_segments:
        image.add_file(str(SAMPLE / "sample"), offset, size, vaddr)
    yield image
    image.close()


# -- recorded programs --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def libcalls(tmp_path_factory):
    """test_traces/src/libcalls.c built and recorded once for the whole run: (bundle, program, zlib used)."""
    return record_libcalls(tmp_path_factory.mktemp("libcalls"))


# -- committed scenarios, opened for decoding ---------------------------------------------------------------


@pytest.fixture(scope="session")
def scenario(tmp_path_factory):
    """``scenario(name)``: the committed bundle opened, or the same recipe recorded again here."""
    scenarios, percpu_scenario = trace_scripts.scenarios, trace_scripts.percpu_scenario
    opened = {}

    def get(name):
        if name not in opened:
            folder = TRACES / name
            recorded = name == "percpu" or name in scenarios.BY_NAME  # sample is hand-made: self-contained
            if recorded and not scenarios.modules_match(folder / "trace.json"):
                fresh = tmp_path_factory.mktemp(name) / name
                if name == "percpu":
                    folder = percpu_scenario.make(fresh).parent
                else:
                    folder = scenarios.make(scenarios.BY_NAME[name], fresh).parent
            opened[name] = open_bundle(folder)
        return opened[name]

    yield get
    for each in opened.values():
        each.image.close()


@pytest.fixture(scope="session")
def psb_case(scenario, tmp_path_factory):
    """``psb_case(name)``: a bundle made by test_traces/psb_cases.py from the basic scenario's recording."""
    made = {}

    def get(name):
        if name not in made:
            source = scenario("basic").folder
            path = trace_scripts.psb_cases.make_case(source, name, tmp_path_factory.mktemp("psb-cases") / name)
            opened = open_bundle(path.parent)
            opened.psbs = json.loads((path.parent / "psbs.json").read_text())["psbs"]
            made[name] = opened
        return made[name]

    yield get
    for each in made.values():
        each.image.close()
