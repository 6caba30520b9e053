"""The compiled parts, built as optional extensions; everything else about the package is in pyproject.toml.

The decode loops are plain C libraries loaded with ctypes, not Python modules:
they need neither Python's headers nor libipt at build time.  The value
engine's hot modules (values/engine_build.py) are its own Python source
compiled by Cython, about a fifth faster, with Python's headers.  Every one is
optional: an install without a C compiler, Cython or the headers succeeds and
runs the Python code instead, with the same results (``pt dump`` says which
decode loop ran, ``trace dump info`` which value engine).
"""

import hashlib
import json
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = {
    "lldb_trace.decode._block_loop": "lldb_trace/decode/block_loop.c",  # the decode loop (compiled_loop.py)
    "lldb_trace.decode._forest_runs": "lldb_trace/decode/forest_runs.c",  # the call forest's runs (compiled_runs.py)
}
# The value engine's modules where a window's solving spends its time (lldb_trace/values/engine_build.py).
ENGINE = (
    "chunk", "generations", "memory_layout", "kernel_steps", "rules", "integer_ops", "semantics", "structure", "slots",
    "paged_memory",
)  # fmt: skip
ENGINE_PACKAGE = "lldb_trace.values"
SOURCES_FILE = "_compiled_sources.json"  # module -> the SHA-256 of the source it was compiled from


def engine_extensions():
    """The engine's modules as Cython extensions, or none where Cython is missing or cannot translate them."""
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("note: Cython is missing: the value engine will run as Python")
        return []
    modules = [
        Extension(f"{ENGINE_PACKAGE}.{name}", [f"lldb_trace/values/{name}.py"], optional=True) for name in ENGINE
    ]
    directives = {"language_level": "3", "annotation_typing": False}  # Python's semantics: annotations say nothing
    try:
        built = cythonize(modules, build_dir="build/cython", compiler_directives=directives, quiet=True)
    except Exception as error:  # a Cython that cannot translate the source: the Python engine runs
        print(f"note: Cython could not translate the value engine ({error}): it will run as Python")
        return []
    for extension in built:
        extension.optional = True
    return built


class BuildWithSources(build_ext):
    """build_ext, then records the source of each engine module built, which engine_build.py checks at import
    (a module whose source changed since it was compiled runs from its source)."""

    def run(self):
        super().run()
        sources, folder = {}, None
        for extension in self.extensions:
            package, _, name = extension.name.rpartition(".")
            built = Path(self.get_ext_fullpath(extension.name))
            if package == ENGINE_PACKAGE and built.exists():
                source = Path("lldb_trace/values", f"{name}.py").read_bytes()
                sources[name], folder = hashlib.sha256(source).hexdigest(), built.parent
        if folder is not None:
            (folder / SOURCES_FILE).write_text(json.dumps(sources, indent=1, sort_keys=True) + "\n")


setup(
    ext_modules=[
        *(Extension(name, [source], extra_compile_args=["-O2"], optional=True) for name, source in COMPILED.items()),
        *engine_extensions(),
    ],
    cmdclass={"build_ext": BuildWithSources},
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
