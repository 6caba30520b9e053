"""``vFile:`` packets: the client reads the trace's module files through the connection, and nothing else.

GDB's default sysroot (``target:``) and LLDB's platform read a remote
program's files this way.  The server opens only the files the trace names
(each module's path as it ran, served from the file the bundle holds), read
only; any other path is "no such file", any write is refused.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

ENOENT, EBADF, EACCES, EINVAL = 2, 9, 13, 22
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MAX_OPEN = 64
MAX_READ = 0x2000  # bytes per pread: the reply, escaped, must fit in a packet the client takes


class HostFiles:
    """The open files of one connection: ``modules`` maps a path as it ran to the local file to read."""

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules
        self.open_files: dict[int, Path] = {}

    def handle(self, request: bytes) -> bytes:
        """The reply to ``vFile:OPERATION:ARGS`` (``request`` is what follows ``vFile:``)."""
        operation, _, arguments = request.partition(b":")
        handler = _OPERATIONS.get(operation)
        if handler is None:
            return b""
        try:
            return handler(self, arguments.split(b","))
        except (ValueError, IndexError):
            return _failed(EINVAL)

    def _setfs(self, _arguments):
        return b"F0"

    def _open(self, arguments):
        path, flags = bytes.fromhex(arguments[0].decode()).decode(errors="replace"), int(arguments[1], 16)
        local = self.modules.get(path)
        if local is None:
            return _failed(ENOENT)
        if flags & _WRITING:
            return _failed(EACCES)
        if len(self.open_files) >= MAX_OPEN:
            return _failed(EINVAL)
        descriptor = next(n for n in range(3, 3 + MAX_OPEN + 1) if n not in self.open_files)
        self.open_files[descriptor] = local
        return b"F%x" % descriptor

    def _pread(self, arguments):
        local = self.open_files.get(int(arguments[0], 16))
        count, offset = int(arguments[1], 16), int(arguments[2], 16)
        if local is None:
            return _failed(EBADF)
        if offset < 0 or count < 0:
            return _failed(EINVAL)
        try:
            with open(local, "rb") as file:
                file.seek(offset)
                data = file.read(min(count, MAX_READ))
        except OSError as error:
            return _failed(error.errno or EACCES)
        return b"F%x;" % len(data) + data

    def _close(self, arguments):
        if self.open_files.pop(int(arguments[0], 16), None) is None:
            return _failed(EBADF)
        return b"F0"

    def _fstat(self, arguments):
        local = self.open_files.get(int(arguments[0], 16))
        if local is None:
            return _failed(EBADF)
        try:
            status = local.stat()
        except OSError as error:
            return _failed(error.errno or EACCES)
        # GDB's File-I/O struct stat: big-endian, 32-bit fields but for the three 64-bit sizes
        data = struct.pack(
            ">IIIIIIIQQQIII", 0, 0, 0o100444, 1, 0, 0, 0, status.st_size, 4096, (status.st_size + 511) // 512, 0, 0, 0
        )
        return b"F%x;" % len(data) + data

    def _size(self, arguments):  # LLDB's vFile:size:PATH
        local = self.modules.get(bytes.fromhex(arguments[0].decode()).decode(errors="replace"))
        if local is None:
            return _failed(ENOENT)
        try:
            return b"F%x" % local.stat().st_size
        except OSError as error:
            return _failed(error.errno or EACCES)

    def _exists(self, arguments):  # LLDB's vFile:exists:PATH
        return b"F,%d" % (bytes.fromhex(arguments[0].decode()).decode(errors="replace") in self.modules)

    def _refused(self, _arguments):
        return _failed(EACCES)


def _failed(errno: int) -> bytes:
    return b"F-1,%x" % errno


_OPERATIONS = {
    b"setfs": HostFiles._setfs,
    b"open": HostFiles._open,
    b"pread": HostFiles._pread,
    b"close": HostFiles._close,
    b"fstat": HostFiles._fstat,
    b"size": HostFiles._size,
    b"exists": HostFiles._exists,
    b"pwrite": HostFiles._refused,
    b"unlink": HostFiles._refused,
    b"readlink": HostFiles._refused,
}
