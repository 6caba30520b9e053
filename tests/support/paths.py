"""Where the tests find the repository and its committed traces, named once instead of in every test file."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "test_traces"  # the committed bundles and the scripts that made them
SOURCES = TRACES / "src"  # the C programs the bundles were recorded from
HISTORY = TRACES / "history"  # the bundles with GDB's committed answers
