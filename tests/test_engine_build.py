"""The value engine compiled by setup.py (Cython) gives the answers its Python source gives, and a module whose
source changed since the build runs from its source (values/engine_build.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lldb_trace import values
from lldb_trace.values import engine_build

PACKAGE = Path(values.__file__).parents[1]
needs_build = pytest.mark.skipif(
    not values.ENGINE.startswith("compiled"), reason=f"the value engine was not compiled: {values.ENGINE}"
)

# The registers at every position of a recording and the stack around the end's rsp at every 16th, from its end
# core alone and from all its known states, as one digest.
ANSWERS = """
import hashlib, sys
import lldb_trace.api as pt
from lldb_trace import values
from lldb_trace.values import chunk
digest = hashlib.sha256()
for options in ({"core": "test_traces/history/exceptions/cores/end.core"}, {}):
    thread = pt.open_bundle("test_traces/history/exceptions/trace.json", **options).threads[0]
    rsp = thread.registers_at(thread.item_count)["rsp"]
    for position in range(thread.item_count + 1):
        digest.update(repr(sorted(thread.registers_at(position).items())).encode())
        if position % 16 == 0:
            digest.update(b"".join(thread.read_memory_at(position, rsp - 128, 256)))
print(values.ENGINE, chunk.__file__, digest.hexdigest(), sep="\\n")
"""


def _run(code, package_parent, engine=None, cwd=PACKAGE.parent):
    environment = {**os.environ, "PYTHONPATH": str(package_parent)}
    environment.pop(engine_build.ENVIRONMENT, None)
    if engine is not None:
        environment[engine_build.ENVIRONMENT] = engine
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment, cwd=cwd
    )
    return found.stdout.splitlines()


@needs_build
def test_the_compiled_engine_answers_as_its_source_does():
    compiled_engine, compiled_module, compiled = _run(ANSWERS, PACKAGE.parent)
    python_engine, python_module, python = _run(ANSWERS, PACKAGE.parent, engine="python")
    assert compiled_engine == "compiled (Cython)" and not compiled_module.endswith(".py")
    assert python_engine == "Python (LLDB_TRACE_ENGINE=python)" and python_module.endswith("chunk.py")
    assert compiled == python


@needs_build
def test_a_module_changed_since_the_build_runs_from_its_source(tmp_path):
    copy = tmp_path / "lldb_trace"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "values" / "generations.py", "a") as source:
        source.write("\nEDITED = True\n")
    engine, chunk_file, generations_edited = _run(
        "from lldb_trace import values\nfrom lldb_trace.values import chunk, generations\n"
        "print(values.ENGINE, chunk.__file__, getattr(generations, 'EDITED', False), sep='\\n')",
        tmp_path,
        cwd=tmp_path,
    )
    assert engine == "compiled (Cython) but generations, changed since the build: run scripts/setup.sh"
    assert not chunk_file.endswith(".py") and generations_edited == "True"


def test_without_a_build_the_engine_says_so(tmp_path):
    (tmp_path / "chunk.py").write_text("")
    assert engine_build.guard("nowhere", tmp_path).startswith("Python (not compiled")


@needs_build
@pytest.mark.parametrize("record", ["null", "[]", "{", None])
def test_a_damaged_or_missing_record_runs_the_source(tmp_path, record):
    copy = tmp_path / "lldb_trace"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if record is None:
        (copy / "values" / engine_build.SOURCES_FILE).unlink()
    else:
        (copy / "values" / engine_build.SOURCES_FILE).write_text(record)
    code = "from lldb_trace import values\nfrom lldb_trace.values import chunk\n"
    code += "print(values.ENGINE, chunk.__file__, sep='\\n')"
    engine, chunk_file = _run(code, tmp_path, cwd=tmp_path)
    assert engine.startswith("Python (the build's record of its sources") and chunk_file.endswith("chunk.py")
