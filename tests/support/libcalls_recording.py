"""test_traces/src/libcalls.c, built and recorded with ``lldb-trace record``, for the call tree and API tests.

The program calls libc (strlen and memcpy are IFUNCs, malloc, free), libm
(cos, an IFUNC, and exp) and, when its header is installed, zlib (crc32,
adler32) from main, three rounds: the first call of each binds lazily through
ld.so's resolver (Debian's gcc links lazily), the later ones do not.
"""

import subprocess
import sys
from pathlib import Path

from .paths import SOURCES

SOURCE = SOURCES / "libcalls.c"
ROUNDS = 3
# What runs as main's callees in each round: (module glob, glob of the function that runs, the module whose
# PLT stub led there, the stub's name).  zlib's crc32 and adler32 end in a tail call, through libz's own PLT, of
# crc32_z and adler32_z: those replace their frames, as main's next callees.
CALLS_PER_ROUND = [
    ("libc.so.6", "*strlen*", "libcalls", "strlen"),
    ("libc.so.6", "*malloc*", "libcalls", "malloc"),
    ("libc.so.6", "*mem*", "libcalls", "memcpy"),
    ("libm.so.6", "*cos*", "libcalls", "cos"),
    ("libm.so.6", "exp*", "libcalls", "exp"),
    ("libz.so*", "crc32", "libcalls", "crc32"),
    ("libz.so*", "crc32_z", "libz.so*", "crc32_z"),
    ("libz.so*", "adler32", "libcalls", "adler32"),
    ("libz.so*", "adler32_z", "libz.so*", "adler32_z"),
    ("libc.so.6", "*free*", "libcalls", "free"),
]


def has_zlib():
    probe = subprocess.run(["gcc", "-E", "-x", "c", "-", "-o", "/dev/null"], input="#include <zlib.h>\n",
                           capture_output=True, text=True)  # fmt: skip
    return probe.returncode == 0


def expected_calls(zlib):
    """What main calls, in order, over all rounds."""
    per_round = [call for call in CALLS_PER_ROUND if zlib or not call[0].startswith("libz")]
    return per_round * ROUNDS


def record_libcalls(directory):
    """Build and record the program into ``directory``; returns ``(bundle path, program path, zlib used)``."""
    directory = Path(directory)
    program = directory / "libcalls"
    zlib = has_zlib()
    flags = ["-O0", "-g", "-fno-builtin", "-Wl,-z,lazy"]  # lazy: first calls go through ld.so's resolver
    subprocess.run(["gcc", *flags, "-o", str(program), str(SOURCE), "-lm", *(["-lz"] if zlib else [])], check=True)
    bundle = directory / "bundle"
    command = [sys.executable, "-m", "lldb_trace.cli", "record", "-o", str(bundle), "--psb-period", "256"]
    subprocess.run([*command, "--", str(program)], check=True, capture_output=True)  # PSBs: pieces can be cut
    return bundle / "trace.json", program, zlib
