"""Loading a trace file of any kind: the file's first bytes, not its name, choose the loader.

A Linux perf.data starts with perf's magic; anything else is taken for a JSON bundle, whose loader says
what is wrong with a file that is neither.  This table sits above bundle/ and perf_data/, so neither
of them imports the other to reach a loader.
"""

from .bundle.loader import BundleError, bundle_file, load_bundle
from .given_paths import given_path
from .perf.data_file import MAGIC, MAGIC_BIG_ENDIAN, MAGIC_VERSION_1
from .perf_data.loading import load_perf_data
from .values.core_match import with_checked_cores

_MAGIC_SIZE = 8
TRACE = "the trace (a bundle's JSON file, its folder or a perf.data)"
_KINDS = {MAGIC: "perf.data", MAGIC_BIG_ENDIAN: "perf.data", MAGIC_VERSION_1: "perf.data"}  # magic -> kind


def _load_json_bundle(path, _binaries):
    """A JSON bundle names its modules' files itself: ``binaries`` only helps a perf.data find its own."""
    return load_bundle(path)


LOADERS = {"bundle": _load_json_bundle, "perf.data": load_perf_data}  # kind -> loader(path, binaries)


def file_kind(path):
    """``"perf.data"`` when the file starts with perf's magic (native, byte-swapped or version 1), else ``"bundle"``."""
    try:
        with open(path, "rb") as file:
            return _KINDS.get(file.read(_MAGIC_SIZE), "bundle")
    except OSError:
        return "bundle"  # the bundle loader says what is wrong with the file


def load_trace(path, binaries=None, core=None):
    """The Bundle of a trace file: a JSON bundle (or a folder holding trace.json) or a perf.data.

    ``binaries`` (a perf_data.BinarySearch) says where else to look for the binaries a perf.data names.
    ``core`` is the path of a core file of a traced process where its trace ends (``--core``): it replaces
    that process's ``coreFile``.  Every core is checked against the trace (values/core_match.py).
    """
    path = bundle_file(given_path(path, TRACE).expanduser().absolute())
    if path.is_file() and not path.stat().st_size:
        raise BundleError(f"{path} is empty: give a bundle's JSON file or a perf.data (was the recording cut short?)")
    if core is not None:
        given_path(core, "the core file (--core)")
    return with_checked_cores(LOADERS[file_kind(path)](path, binaries), core)
