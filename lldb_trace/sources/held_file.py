"""A file read piece by piece as asked (``pread``), for a file its owner may rewrite in place while it is loaded.

A mapping of a file that is truncated under it kills its reader with SIGBUS,
and one rewritten in place shows the new bytes beside what was read of the
old: gcore, and the kernel writing a crash's core, reuse the file's name and
inode.  Read this way, a file that changed since it was opened (its size or
time of change differ) gives no more bytes: what it said is no longer known.
"""

from __future__ import annotations

import os


class HeldFile:
    """The bytes of the file at ``path``, sliced as ``held[start:stop]`` (bytes; b"" once the file changed)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._stamp = self._status()
        self.changed = False

    def _status(self) -> tuple[int, int]:
        status = os.fstat(self._fd)
        return status.st_size, status.st_mtime_ns

    def __len__(self) -> int:
        return self._stamp[0]

    def __getitem__(self, where: slice) -> bytes:
        start, stop, _ = where.indices(self._stamp[0])
        if stop <= start or self.changed:
            return b""
        if self._status() != self._stamp:
            self.changed = True
            return b""
        return os.pread(self._fd, stop - start, start)

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
