"""The recordings a batch command analyses: files and folders given on the command line, expanded.

A bundle folder (one holding trace.json) is one recording; any other folder
is searched, in name order, for bundle folders and perf.data files (named
``perf.data`` or ``*.perf.data`` and starting with perf's magic).  A file
given by name is taken as it is: the loader says what is wrong with it, on
the worker that opens it.  Paths are made absolute here: workers run in
other folders, possibly on other machines that see the same storage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..bundle.loader import BUNDLE_FILE_IN_DIRECTORY
from ..errors import LldbTraceError
from ..trace_files import file_kind


class InputError(LldbTraceError):
    """An input that is missing, unreadable, or a folder with no recordings in it."""


@dataclass(frozen=True)
class Recording:
    """One trace to analyse: ``path`` as the workers open it (absolute), ``name`` as the user wrote it."""

    path: str
    name: str


def recordings(inputs: list[str]) -> list[Recording]:
    """Every recording ``inputs`` name, in order, each once."""
    found: dict[str, Recording] = {}
    for text in inputs:
        for recording in _expand(text):
            found.setdefault(recording.path, recording)
    return list(found.values())


def _expand(text: str) -> list[Recording]:
    path = Path(text).expanduser()
    if not path.exists():
        raise InputError(f"{text}: no such file or folder")
    if not path.is_dir() or _is_bundle_folder(path):
        return [Recording(str(path.absolute()), text)]
    found = [Recording(str(inside.absolute()), str(Path(text) / inside.relative_to(path))) for inside in _walk(path)]
    if not found:
        raise InputError(
            f"{text}: no recordings in this folder (bundle folders holding {BUNDLE_FILE_IN_DIRECTORY}, "
            "or perf.data files)"
        )
    return found


def _walk(folder: Path) -> list[Path]:
    """Bundle folders and perf.data files under ``folder``, in name order; a bundle folder is not entered."""
    found = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        raise InputError(f"cannot read the folder {folder}: {error.strerror}") from None
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and _is_bundle_folder(path):
            found.append(path)
        elif entry.is_dir(follow_symlinks=False):  # a linked folder is not searched: links can loop
            found.extend(_walk(path))
        elif entry.is_file() and _is_perf_data(path):
            found.append(path)
    return found


def _is_bundle_folder(path: Path) -> bool:
    return (path / BUNDLE_FILE_IN_DIRECTORY).is_file()


def _is_perf_data(path: Path) -> bool:
    named = path.name == "perf.data" or path.name.endswith(".perf.data")
    return named and file_kind(path) == "perf.data"
