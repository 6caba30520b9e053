"""Finding the binaries a perf.data names, where perf itself would look, then where the user says.

In order: the path recorded in the MMAP record; perf's build-id cache
(``~/.debug/.build-id/ab/cdef...``, a folder holding ``elf`` in current perf,
the file itself in old perf; ``$PERF_BUILDID_DIR`` moves ``~/.debug``); the
recorded path under each ``--sysroot``; then each ``--search-path`` folder,
by the recorded path under it and by the file's name.  When the recording
names a build-id, a candidate whose build-id differs (the program was rebuilt
since) is passed over, and the search goes on.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from ..elf_info import ElfInfo, NotAnElfError


@dataclass(frozen=True)
class BinarySearch:
    """Where to look besides the recorded path and perf's cache."""

    sysroots: tuple = ()
    search_paths: tuple = ()
    cache: Path | None = None  # perf's ~/.debug

    @classmethod
    def default(cls, sysroots=(), search_paths=()):
        cache = Path(os.environ.get("PERF_BUILDID_DIR") or Path.home() / ".debug")
        return cls(tuple(map(Path, sysroots)), tuple(map(Path, search_paths)), cache)


def find_binary(recorded, build_id, search):
    """``(path, elf)`` of the binary that ran as ``recorded`` (with ``build_id`` if known), or ``(None, None)``."""
    for candidate in _candidates(recorded, build_id, search):
        elf = _elf(candidate)
        if elf is not None and (not build_id or not elf.build_id or elf.build_id == build_id):
            return candidate, elf
    return None, None


def _candidates(recorded, build_id, search):
    recorded_path = Path(recorded)
    yield recorded_path
    if build_id and search.cache is not None:
        by_id = search.cache / ".build-id" / build_id[:2] / build_id[2:]
        yield by_id / "elf"
        yield by_id
        yield search.cache / recorded.lstrip("/") / build_id / "elf"
    relative = recorded.lstrip("/")
    for root in search.sysroots:
        yield root / relative
    for folder in search.search_paths:
        yield folder / relative
        yield folder / recorded_path.name


def _elf(path):
    try:
        if not path.is_file():
            return None
        elf = ElfInfo.read(path)
    except (OSError, NotAnElfError):
        return None
    return elf if elf.segments else None
