"""The compiled loops, built as optional extensions; everything else about the package is in pyproject.toml.

Each is a plain C library loaded with ctypes, not a Python module: it needs
neither Python's headers nor libipt at build time.  ``optional=True`` lets an
install without a C compiler succeed; the package then runs its Python code
instead, with the same results (``pt dump`` says which decode loop ran).
"""

from setuptools import Extension, setup

COMPILED = {
    "lldb_trace.decode._block_loop": "lldb_trace/decode/block_loop.c",  # the decode loop (compiled_loop.py)
    "lldb_trace.decode._forest_runs": "lldb_trace/decode/forest_runs.c",  # the call forest's runs (compiled_runs.py)
}

setup(
    ext_modules=[
        Extension(name, [source], extra_compile_args=["-O2"], optional=True) for name, source in COMPILED.items()
    ]
)
