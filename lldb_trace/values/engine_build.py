"""Which of the value engine's modules run compiled, and the guard that keeps a stale build from running.

setup.py compiles the engine's hot modules (its ENGINE) with Cython from this
package's own source, next to it, and records each source's SHA-256 in
``_compiled_sources.json``.  Python imports an extension module before a source
file of the same name, so a module edited (or pulled) since it was built would
run its old code: ``guard`` puts a finder in front that imports such a module
from its source, as it does every module when ``LLDB_TRACE_ENGINE=python``.
The answers are the same either way; the compiled engine is about a fifth faster.
"""

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys

ENVIRONMENT = "LLDB_TRACE_ENGINE"  # "python": run every engine module from its source
SOURCES_FILE = "_compiled_sources.json"  # setup.py's record: module -> SHA-256 of the source compiled


class _FromSource:
    """A meta path finder that imports the modules named (``PACKAGE.NAME``) from their .py files in ``folder``."""

    def __init__(self, names, folder):
        self.names, self.folder = names, folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, self.folder / f"{fullname.rpartition('.')[2]}.py")


def guard(package, folder):
    """Installs the finder for the package's stale modules, or for all where the environment asks; returns what
    runs, in words ("compiled (Cython)", or why Python)."""
    built, recorded = _built(folder), _recorded(folder)
    python = os.environ.get(ENVIRONMENT, "").lower() == "python"
    source = set(built) if python or recorded is None else _stale(built, recorded, folder)
    if source:
        sys.meta_path.insert(0, _FromSource({f"{package}.{name}" for name in source}, folder))
    if not built:
        return "Python (not compiled: run scripts/setup.sh where Cython and Python's headers can be installed)"
    if python:
        return f"Python ({ENVIRONMENT}=python)"
    if recorded is None:
        return (
            f"Python (the build's record of its sources, {SOURCES_FILE}, is missing or damaged: run scripts/setup.sh)"
        )
    if source:
        return f"compiled (Cython) but {', '.join(sorted(source))}, changed since the build: run scripts/setup.sh"
    return "compiled (Cython)"


def _built(folder):
    """The modules with a compiled build beside their source."""
    found = set()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        found |= {path.name[: -len(suffix)] for path in folder.glob(f"*{suffix}")}
    return {name for name in found if (folder / f"{name}.py").exists()}


def _recorded(folder):
    """setup.py's record (module -> SHA-256), or None where it is missing or damaged."""
    try:
        recorded = json.loads((folder / SOURCES_FILE).read_text())
    except (OSError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) else None


def _stale(built, recorded, folder):
    """The built modules whose source is not the one setup.py compiled (or is not recorded)."""
    return {
        name for name in built if recorded.get(name) != hashlib.sha256((folder / f"{name}.py").read_bytes()).hexdigest()
    }
