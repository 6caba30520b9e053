"""A path the user gave, refused when it is empty (``Path("")`` is the current folder, where a save would write
its files and a load would look, none of which the user asked for) or not a path at all."""

import os
from pathlib import Path

from .errors import LldbTraceError


class EmptyPathError(LldbTraceError):
    """An empty path was given where a file or folder must be named."""


class NotAPathError(LldbTraceError):
    """Something that is no path (a number, a list) was given where a file or folder must be named."""


def given_path(text: str | Path, what: str) -> Path:
    """``text`` (a str, or a Path that was never empty) as a Path; ``what`` says what it should name, for the
    error: "the trace (a bundle's JSON file, its folder or a perf.data)"."""
    if isinstance(text, str) and not text:
        raise EmptyPathError(f"the path is empty: give the path of {what}")
    if not isinstance(text, str | os.PathLike):
        raise NotAPathError(f"{text!r} is not a path: give the path of {what} (a str or a Path)")
    return Path(text)
