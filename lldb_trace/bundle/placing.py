"""Putting a bundle's files in place all at once, so an error or Ctrl-C never leaves half a bundle.

Every file is written first into a staging folder (see :func:`staging_folder`), then moved, by renames
on one file system:

- a folder that does not exist yet is the staging folder, renamed;
- a folder whose whole content may go (an earlier recording) is exchanged with the staging folder in one
  step (``renameat2(RENAME_EXCHANGE)``), and the old content deleted;
- any other folder receives the new files one rename each, the bundle file last, and keeps the rest.
"""

import ctypes
import errno
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import LldbTraceError

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


class PlacingError(LldbTraceError):
    """The bundle's files cannot be put where asked."""


def staging_folder(directory, beside):
    """A new empty folder on ``directory``'s file system: beside it, or inside it when it is only added to."""
    anchor = directory if not beside else directory.parent
    while not anchor.exists():
        anchor = anchor.parent
    try:
        return Path(tempfile.mkdtemp(prefix=f".{directory.name}.partial-", dir=anchor))
    except OSError as error:
        raise PlacingError(f"cannot write in {anchor}: {error.strerror}") from None


def create(staging, directory):
    """``directory`` (absent) becomes the staged folder."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    os.rename(staging, directory)


def exchange(staging, directory):
    """``directory`` takes the staged content in one step; its old content is deleted."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(staging), _AT_FDCWD, os.fsencode(directory), _RENAME_EXCHANGE):
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), str(directory))
        # This file system cannot exchange: two renames, the old content kept aside until the new is in.
        aside = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
        os.rename(directory, aside / "old")
        os.rename(staging, directory)
        staging = aside
    shutil.rmtree(staging)


def add(staging, directory, files, last):
    """Move the staged ``files`` (relative paths) into ``directory``, ``last`` after all others."""
    for name in files:
        _check_room(directory, Path(name))
    for name in sorted(files, key=lambda name: name == last):
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, target)
    shutil.rmtree(staging)


def _check_room(directory, name):
    """Refuse before moving anything when a folder stands where a file goes, or a file where a folder does."""
    place = directory
    for part in name.parent.parts:
        place = place / part
        if place.exists() and not place.is_dir():
            raise PlacingError(f"{place} is a file where the bundle needs a folder: move it away")
    if (directory / name).is_dir():
        raise PlacingError(f"{directory / name} is a folder where the bundle writes a file: move it away")
