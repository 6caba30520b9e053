"""Loading libipt and declaring every prototype up front.

The library is searched for in this order: the ``LIBIPT_PATH`` environment
variable (a file, or a directory holding ``libipt.so.2``), then the system
loader.  Loading is lazy so ``import lldb_trace`` works without libipt; the
first decoder or encoder raises :class:`LibiptUnavailableError` instead.
"""

import ctypes
import ctypes.util
import functools
import os
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint32, c_uint64, c_void_p

from ..errors import LldbTraceError
from . import structs as s

SONAME = "libipt.so.2"
SUPPORTED_MAJOR = 2
INSTALL_HINT = "install it with 'apt-get install libipt2' or set LIBIPT_PATH to libipt.so.2"

_P = c_void_p
_U64P = POINTER(c_uint64)
_U32P = POINTER(c_uint32)
_INTP = POINTER(c_int)
_CFG = POINTER(s.pt_config)
_ASID = POINTER(s.pt_asid)

# name: (restype, argtypes)
_PROTOTYPES = {
    "pt_library_version": (s.pt_version, []),
    "pt_errstr": (c_char_p, [c_int]),
    "pt_cpu_errata": (c_int, [POINTER(s.pt_errata), POINTER(s.pt_cpu)]),
    # encoder
    "pt_alloc_encoder": (_P, [_CFG]),
    "pt_free_encoder": (None, [_P]),
    "pt_enc_sync_set": (c_int, [_P, c_uint64]),
    "pt_enc_get_offset": (c_int, [_P, _U64P]),
    "pt_enc_get_config": (_CFG, [_P]),
    "pt_enc_next": (c_int, [_P, POINTER(s.pt_packet)]),
    # packet decoder
    "pt_pkt_alloc_decoder": (_P, [_CFG]),
    "pt_pkt_free_decoder": (None, [_P]),
    "pt_pkt_sync_forward": (c_int, [_P]),
    "pt_pkt_sync_backward": (c_int, [_P]),
    "pt_pkt_sync_set": (c_int, [_P, c_uint64]),
    "pt_pkt_get_offset": (c_int, [_P, _U64P]),
    "pt_pkt_get_sync_offset": (c_int, [_P, _U64P]),
    "pt_pkt_get_config": (_CFG, [_P]),
    "pt_pkt_next": (c_int, [_P, POINTER(s.pt_packet), c_size_t]),
    # query decoder
    "pt_qry_alloc_decoder": (_P, [_CFG]),
    "pt_qry_free_decoder": (None, [_P]),
    "pt_qry_sync_forward": (c_int, [_P, _U64P]),
    "pt_qry_sync_backward": (c_int, [_P, _U64P]),
    "pt_qry_sync_set": (c_int, [_P, _U64P, c_uint64]),
    "pt_qry_get_offset": (c_int, [_P, _U64P]),
    "pt_qry_get_sync_offset": (c_int, [_P, _U64P]),
    "pt_qry_get_config": (_CFG, [_P]),
    "pt_qry_cond_branch": (c_int, [_P, _INTP]),
    "pt_qry_indirect_branch": (c_int, [_P, _U64P]),
    "pt_qry_event": (c_int, [_P, POINTER(s.pt_event), c_size_t]),
    "pt_qry_time": (c_int, [_P, _U64P, _U32P, _U32P]),
    "pt_qry_core_bus_ratio": (c_int, [_P, _U32P]),
    # image section cache
    "pt_iscache_alloc": (_P, [c_char_p]),
    "pt_iscache_free": (None, [_P]),
    "pt_iscache_set_limit": (c_int, [_P, c_uint64]),
    "pt_iscache_name": (c_char_p, [_P]),
    "pt_iscache_add_file": (c_int, [_P, c_char_p, c_uint64, c_uint64, c_uint64]),
    "pt_iscache_read": (c_int, [_P, c_void_p, c_uint64, c_int, c_uint64]),
    # image
    "pt_image_alloc": (_P, [c_char_p]),
    "pt_image_free": (None, [_P]),
    "pt_image_name": (c_char_p, [_P]),
    "pt_image_add_file": (c_int, [_P, c_char_p, c_uint64, c_uint64, _ASID, c_uint64]),
    "pt_image_add_cached": (c_int, [_P, _P, c_int, _ASID]),
    "pt_image_copy": (c_int, [_P, _P]),
    "pt_image_remove_by_filename": (c_int, [_P, c_char_p, _ASID]),
    "pt_image_remove_by_asid": (c_int, [_P, _ASID]),
    "pt_image_set_callback": (c_int, [_P, s.READ_MEMORY_CALLBACK, c_void_p]),
}

# The instruction and block decoders share one API shape under two prefixes.
for _prefix, _item in (("pt_insn_", s.pt_insn), ("pt_blk_", s.pt_block)):
    _PROTOTYPES.update(
        {
            _prefix + "alloc_decoder": (_P, [_CFG]),
            _prefix + "free_decoder": (None, [_P]),
            _prefix + "sync_forward": (c_int, [_P]),
            _prefix + "sync_backward": (c_int, [_P]),
            _prefix + "sync_set": (c_int, [_P, c_uint64]),
            _prefix + "get_offset": (c_int, [_P, _U64P]),
            _prefix + "get_sync_offset": (c_int, [_P, _U64P]),
            _prefix + "get_image": (_P, [_P]),
            _prefix + "set_image": (c_int, [_P, _P]),
            _prefix + "get_config": (_CFG, [_P]),
            _prefix + "time": (c_int, [_P, _U64P, _U32P, _U32P]),
            _prefix + "core_bus_ratio": (c_int, [_P, _U32P]),
            _prefix + "asid": (c_int, [_P, _ASID, c_size_t]),
            _prefix + "next": (c_int, [_P, POINTER(_item), c_size_t]),
            _prefix + "event": (c_int, [_P, POINTER(s.pt_event), c_size_t]),
        }
    )


class LibiptUnavailableError(LldbTraceError):
    """libipt could not be loaded, or is not a supported version."""


def _candidates():
    override = os.environ.get("LIBIPT_PATH")
    if override:
        yield os.path.join(override, SONAME) if os.path.isdir(override) else override
        return
    yield SONAME
    found = ctypes.util.find_library("ipt")
    if found and found != SONAME:
        yield found


def _open():
    failures = []
    for candidate in _candidates():
        try:
            return ctypes.CDLL(candidate)
        except OSError as exc:
            failures.append(f"{candidate}: {exc}")
    where = "; ".join(failures) or SONAME
    if os.environ.get("LIBIPT_PATH"):
        raise LibiptUnavailableError(
            f"cannot load libipt from LIBIPT_PATH ({where}); point LIBIPT_PATH at libipt.so.2 "
            "or unset it to use the system's libipt2"
        )
    raise LibiptUnavailableError(f"libipt (Intel PT decoder library) not found: {INSTALL_HINT}")


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            raise LibiptUnavailableError(
                f"the loaded libipt has no {name}: it is not libipt 2.x; {INSTALL_HINT}"
            ) from None
        function.restype = restype
        function.argtypes = argtypes


@functools.cache
def lib():
    """The loaded, version-checked, fully declared libipt (cached)."""
    handle = _open()
    _declare(handle)
    version = handle.pt_library_version()
    if version.major != SUPPORTED_MAJOR:
        raise LibiptUnavailableError(
            f"libipt {version.major}.{version.minor} is not supported (need 2.x): {INSTALL_HINT}"
        )
    return handle


def library_version():
    """libipt's own version as ``(major, minor, patch, build, ext)``."""
    version = lib().pt_library_version()
    ext = version.ext.decode() if version.ext else ""
    return (version.major, version.minor, version.patch, version.build, ext)
