"""Traced memory images (``pt_image_*``) and the image section cache (``pt_iscache_*``).

An image maps virtual addresses to file sections (or to a read-memory
callback) so the block and instruction decoders can read the code they walk.
"""

import ctypes
import os

from .enums import ErrorCode
from .error import LibiptError, check
from .native import lib
from .structs import PT_ASID_NO_CR3, PT_ASID_NO_VMCS, READ_MEMORY_CALLBACK, pt_asid


def make_asid(cr3=None, vmcs=None):
    """A ``pt_asid``; None fields mean "any address space"."""
    asid = pt_asid()
    asid.size = ctypes.sizeof(pt_asid)
    asid.cr3 = PT_ASID_NO_CR3 if cr3 is None else cr3
    asid.vmcs = PT_ASID_NO_VMCS if vmcs is None else vmcs
    return asid


def _asid_ref(asid):
    return None if asid is None else ctypes.byref(asid)


def _encode_path(path):
    """The file name's bytes (a name that is not UTF-8 comes back as it is on disk)."""
    return os.fsencode(path)


class _Owned:
    """A C object freed exactly once, by close(), a with-block, or garbage collection."""

    _free_name = ""
    _handle = None

    def __init__(self, handle, what):
        if not handle:
            raise LibiptError(-ErrorCode.NOMEM, what)
        self._handle = handle

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._handle

    def close(self):
        if self._handle is not None:
            getattr(lib(), self._free_name)(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class SectionCache(_Owned):
    """``pt_image_section_cache``: file sections shared by many images."""

    _free_name = "pt_iscache_free"

    def __init__(self, name=None):
        super().__init__(lib().pt_iscache_alloc(name.encode() if name else None), "pt_iscache_alloc")

    @property
    def name(self):
        name = lib().pt_iscache_name(self.handle)
        return name.decode() if name else None

    def set_limit(self, limit):
        """Bound the bytes of mapped sections kept in memory."""
        check(lib().pt_iscache_set_limit(self.handle, limit), "pt_iscache_set_limit")

    def add_file(self, path, offset, size, vaddr):
        """Add ``size`` bytes of ``path`` at ``offset`` loaded at ``vaddr``; return the isid."""
        return check(
            lib().pt_iscache_add_file(self.handle, _encode_path(path), offset, size, vaddr),
            f"pt_iscache_add_file {path}",
        )

    def read(self, isid, vaddr, size):
        """Read memory from a cached section (may return fewer bytes at a section end)."""
        buffer = ctypes.create_string_buffer(size)
        count = check(lib().pt_iscache_read(self.handle, buffer, size, isid, vaddr), "pt_iscache_read")
        return buffer.raw[:count]


class Image(_Owned):
    """``pt_image``: the memory a decoder reads instructions from."""

    _free_name = "pt_image_free"

    def __init__(self, name=None):
        super().__init__(lib().pt_image_alloc(name.encode() if name else None), "pt_image_alloc")
        self._callback = None  # the C function pointer must outlive its registration
        self._caches = []  # section caches referenced by add_cached

    @property
    def name(self):
        name = lib().pt_image_name(self.handle)
        return name.decode() if name else None

    def add_file(self, path, offset, size, vaddr, asid=None):
        """Map ``size`` bytes of ``path`` from file ``offset`` at ``vaddr``."""
        check(
            lib().pt_image_add_file(self.handle, _encode_path(path), offset, size, _asid_ref(asid), vaddr),
            f"pt_image_add_file {path}",
        )

    def add_cached(self, cache, isid, asid=None):
        """Map a section of ``cache`` (see SectionCache.add_file)."""
        check(lib().pt_image_add_cached(self.handle, cache.handle, isid, _asid_ref(asid)), "pt_image_add_cached")
        self._caches.append(cache)

    def copy_from(self, other):
        """Add every section of ``other``; returns how many could not be added."""
        self._caches.extend(other._caches)
        return check(lib().pt_image_copy(self.handle, other.handle), "pt_image_copy")

    def remove_by_filename(self, path, asid=None):
        """Remove the sections of ``path``; returns how many were removed."""
        return check(
            lib().pt_image_remove_by_filename(self.handle, _encode_path(path), _asid_ref(asid)),
            "pt_image_remove_by_filename",
        )

    def remove_by_asid(self, asid):
        """Remove the sections of an address space; returns how many were removed."""
        return check(lib().pt_image_remove_by_asid(self.handle, _asid_ref(asid)), "pt_image_remove_by_asid")

    def set_callback(self, read_memory):
        """Read memory not covered by sections through ``read_memory(ip, size) -> bytes``.

        Returning b"" or None, or raising, tells libipt nothing is mapped there;
        an exception never crosses into C.  ``None`` removes the callback.
        """
        if read_memory is None:
            check(lib().pt_image_set_callback(self.handle, READ_MEMORY_CALLBACK(), None), "pt_image_set_callback")
            self._callback = None
            return

        def trampoline(buffer, size, _asid, ip, _context):
            try:
                data = read_memory(ip, size)
            except Exception:
                return -ErrorCode.NOMAP
            if not data:
                return -ErrorCode.NOMAP
            count = min(len(data), size)
            ctypes.memmove(buffer, bytes(data[:count]), count)
            return count

        callback = READ_MEMORY_CALLBACK(trampoline)
        check(lib().pt_image_set_callback(self.handle, callback, None), "pt_image_set_callback")
        self._callback = callback
