"""The scripts beside the committed traces (scenarios.py, perf/cases.py...), imported by path.

test_traces/ is no package and the tests do not put its folders on
sys.path, so this is the one place that reaches its scripts: the tests and
the fuzz campaign's command line (which runs outside pytest) both import
them from here, ``from support.trace_scripts import scenarios``.  Each is
registered under the name the scripts use for one another (percpu_scenario
imports ``scenarios``), so there is one copy of each.
"""

import importlib.util
import sys

from .paths import TRACES

SCRIPTS = {
    "scenarios": TRACES / "scenarios.py",
    "percpu_scenario": TRACES / "percpu_scenario.py",
    "psb_cases": TRACES / "psb_cases.py",
    "cases": TRACES / "perf" / "cases.py",
    "replay": TRACES / "history" / "replay.py",
}


def __getattr__(name):
    """The script ``name`` of SCRIPTS, imported on first use (some need capstone or build programs)."""
    if name not in SCRIPTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS[name])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]
