"""Checks on the files a bundle names, made before anything reads them in full.

A named pipe blocks whoever opens it and ``/dev/zero`` never ends, so only
regular files are read.  A trace without a single PSB cannot be decoded at
all (a decoder starts only at a PSB), which is worth saying at load time
rather than as a puzzling empty thread later.
"""

import stat

from ..libipt.psb import PSB

_CHUNK = 1 << 20
_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def not_a_regular_file(path):
    """What ``path`` is when it is not a regular file (``a named pipe (FIFO)``...), else None."""
    mode = path.stat().st_mode
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def psb_search(path):
    """``(has a PSB, every byte is zero)`` for the trace file at ``path``, read in chunks until the first PSB."""
    all_zero = True
    tail = b""
    with open(path, "rb") as trace:
        while chunk := trace.read(_CHUNK):
            window = tail + chunk
            if PSB in window:
                return True, False
            all_zero = all_zero and not chunk.strip(b"\0")
            tail = window[-(len(PSB) - 1) :]
    return False, all_zero
