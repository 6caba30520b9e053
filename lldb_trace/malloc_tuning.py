"""Giving freed memory back: large blocks from their own mappings, so freeing them shrinks the process.

Decoding and building a call forest allocate and free arrays of tens of
megabytes.  glibc serves blocks of 128 KiB and more from their own mappings
at first, but each time one is freed it raises that threshold (up to 32 MiB),
so the next arrays come from the heap, where a hole left by a freed one is
kept: on a 29M-instruction trace that kept 50 MB and added 20 MB to the
peak.  Setting the threshold explicitly turns that adjustment off, for the
whole process (the debugger's own large blocks too, which then cost a
mapping each: a few microseconds).  Elsewhere than glibc this does nothing.
"""

import ctypes
from functools import cache

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_THRESHOLD = 128 * 1024  # glibc's own starting value


@cache
def return_freed_memory():
    """Fix glibc's mmap threshold once per process; True if it was set."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD))
