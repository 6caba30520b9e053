"""Writing an export all or nothing: into a temporary file beside PATH, renamed onto PATH once complete.

An export of a large trace takes seconds and can fail or be interrupted
half-way; a viewer must never be handed half a file, and an existing file is
replaced only when asked.
"""

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import LldbTraceError
from ..given_paths import given_path


class ExportPathError(LldbTraceError):
    """PATH cannot be written: its folder is missing or unwritable, or a file is there already."""


def check_path(path: str | Path, force: bool) -> Path:
    """``path`` as a Path, or a one-line error saying why an export cannot go there."""
    path = given_path(path, "the export (a file to write)").expanduser()
    if path.is_dir():
        raise ExportPathError(f"{path} is a folder: give the export a file name, e.g. {path / 'trace.json'}")
    if not path.parent.is_dir():
        raise ExportPathError(f"cannot write {path}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise ExportPathError(f"{path} exists: give --force to replace it")
    if not os.access(path.parent, os.W_OK):
        raise ExportPathError(f"cannot write {path}: the folder {path.parent} is not writable")
    return path


@contextlib.contextmanager
def staged(path: Path, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object to write the export to; on success it becomes ``path``, on any error it is removed."""
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
    try:  # created as open() creates files (0666 less the umask), but never over an existing one
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise ExportPathError(f"cannot write {path}: {error.strerror}") from None
    try:
        encoding = None if binary else "utf-8"
        with open(descriptor, "wb" if binary else "w", buffering=1 << 20, encoding=encoding) as out:
            yield out
        os.replace(partial, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        if isinstance(error, OSError):  # a full disk, a folder removed meanwhile
            raise ExportPathError(f"writing {path} failed: {error.strerror or error}") from None
        raise
