"""Checks on the files a bundle names, made before anything reads them in full.

A named pipe blocks whoever opens it and ``/dev/zero`` never ends, so only
regular files are read.  A trace without a single PSB cannot be decoded at
all (a decoder starts only at a PSB), which is worth saying at load time
rather than as a puzzling empty thread later.
"""

import errno
import os
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


def path_problem(path):
    """Why nothing can be found at ``path`` ("does not exist", a folder on the way closed to this user, a loop
    of symbolic links, a NUL in the name), or None.  ``Path.exists`` says False for a loop and a NUL, and raises
    on a closed folder."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except PermissionError:
        return "cannot be reached: permission denied on a folder on its way (chmod +x the folder)"
    except OSError as error:
        return f"cannot be reached: {error.strerror or errno.errorcode.get(error.errno, error)}"
    except ValueError:  # a NUL, or a character no file system's encoding takes
        return "cannot be a file's name" + (": it holds a NUL byte" if "\x00" in str(path) else "")
    return None


def shown_path(path):
    """``path`` for a message: a NUL shown as ``\\x00`` (LLDB prints a message as a C string, which ends there)."""
    return str(path).replace("\x00", "\\x00")


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
