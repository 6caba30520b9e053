"""The encoder and the four libipt decoders (packet, query, block, instruction).

All share one lifetime rule: the object owns its C handle and holds a
reference to its Config (whose buffer libipt reads) and to its Image (whose
sections and callback libipt calls), so nothing is freed while C can reach it.
"""

import ctypes
import functools
from ctypes import c_int, c_uint32, c_uint64
from dataclasses import dataclass

from . import events, packets
from .enums import ErrorCode, ExecMode, InsnClass
from .error import LibiptError, check
from .image import _Owned
from .native import lib
from .structs import pt_asid, pt_block, pt_event, pt_insn, pt_packet

_EVENT_SIZE = ctypes.sizeof(pt_event)


class _Coder(_Owned):
    """Common handle, config and offset plumbing; PREFIX selects the libipt functions."""

    PREFIX = ""

    def __init__(self, config):
        self._fn = {name: getattr(lib(), self.PREFIX + name) for name in self._NAMES}
        alloc = self._ALLOC or self.PREFIX + "alloc_decoder"
        super().__init__(getattr(lib(), alloc)(ctypes.byref(config.c)), alloc)
        self.config = config

    _ALLOC = None
    _NAMES = ("get_offset",)

    def _u64(self, name):
        value = c_uint64()
        check(self._fn[name](self.handle, ctypes.byref(value)), self.PREFIX + name)
        return value.value

    @property
    def offset(self):
        """The current offset in the trace buffer."""
        return self._u64("get_offset")


class Encoder(_Coder):
    """``pt_encoder``: writes packets into the Config's (writable) buffer."""

    PREFIX = "pt_enc_"
    _ALLOC = "pt_alloc_encoder"
    _free_name = "pt_free_encoder"
    _NAMES = ("get_offset", "sync_set", "next")

    def __init__(self, config):
        super().__init__(config)
        self._packet = pt_packet()

    def sync_set(self, offset):
        check(self._fn["sync_set"](self.handle, offset), "pt_enc_sync_set")

    def next(self, packet):
        """Encode one packet; returns its size.  -pte_eos means the buffer is full."""
        c = packet.to_c()
        return check(self._fn["next"](self.handle, ctypes.byref(c)), f"pt_enc_next {type(packet).__name__}")

    def written(self):
        """The bytes encoded so far."""
        return bytes(self.config.trace[: self.offset])


def encode(packet_list, capacity=1 << 16):
    """Encode packets into a fresh buffer and return the bytes."""
    from .config import Config

    with Encoder(Config(bytearray(capacity))) as encoder:
        for packet in packet_list:
            encoder.next(packet)
        return encoder.written()


class _SyncingDecoder(_Coder):
    """Decoders that synchronize on PSBs: sync forward/backward/set and the sync offset."""

    _NAMES = ("get_offset", "get_sync_offset", "sync_forward", "sync_backward", "sync_set")

    def sync_forward(self):
        """Move to the next PSB; returns status flags.  -pte_eos when there is none."""
        return check(self._fn["sync_forward"](self.handle), self.PREFIX + "sync_forward")

    def sync_backward(self):
        return check(self._fn["sync_backward"](self.handle), self.PREFIX + "sync_backward")

    def sync_set(self, offset):
        """Synchronize at the PSB at exactly ``offset``."""
        return check(self._fn["sync_set"](self.handle, offset), self.PREFIX + "sync_set")

    @property
    def sync_offset(self):
        """Offset of the last PSB synchronized on."""
        return self._u64("get_sync_offset")


class PacketDecoder(_SyncingDecoder):
    """``pt_packet_decoder``: the raw packet stream."""

    PREFIX = "pt_pkt_"
    _free_name = "pt_pkt_free_decoder"
    _NAMES = (*_SyncingDecoder._NAMES, "next")

    def __init__(self, config):
        super().__init__(config)
        self._packet = pt_packet()

    def next(self):
        """The next packet; raises LibiptError (EOS at the end of the buffer)."""
        check(self._fn["next"](self.handle, ctypes.byref(self._packet), ctypes.sizeof(pt_packet)), "pt_pkt_next")
        return packets.from_c(self._packet)

    def __iter__(self):
        """Packets until the end of the buffer (errors other than EOS propagate)."""
        while True:
            try:
                yield self.next()
            except LibiptError as error:
                if error.code == ErrorCode.EOS:
                    return
                raise


class _TimedDecoder(_SyncingDecoder):
    """Decoders that track time, core:bus ratio and pending events."""

    _NAMES = (*_SyncingDecoder._NAMES, "time", "core_bus_ratio", "event")

    def __init__(self, config):
        super().__init__(config)
        self._event = pt_event()

    def time(self):
        """``(tsc, lost_mtc, lost_cyc)``; raises NO_TIME before the first TSC."""
        tsc, mtc, cyc = c_uint64(), c_uint32(), c_uint32()
        check(
            self._fn["time"](self.handle, ctypes.byref(tsc), ctypes.byref(mtc), ctypes.byref(cyc)),
            self.PREFIX + "time",
        )
        return tsc.value, mtc.value, cyc.value

    def core_bus_ratio(self):
        ratio = c_uint32()
        check(self._fn["core_bus_ratio"](self.handle, ctypes.byref(ratio)), self.PREFIX + "core_bus_ratio")
        return ratio.value

    def event(self):
        """``(status, Event)`` for the next pending event."""
        status = check(self._fn["event"](self.handle, ctypes.byref(self._event), _EVENT_SIZE), self.PREFIX + "event")
        return status, events.from_c(self._event)


class QueryDecoder(_TimedDecoder):
    """``pt_query_decoder``: answers branch and event queries from the packet stream."""

    PREFIX = "pt_qry_"
    _free_name = "pt_qry_free_decoder"
    _NAMES = (*_TimedDecoder._NAMES, "cond_branch", "indirect_branch")

    def _sync(self, name, *args):
        ip = c_uint64()
        status = check(self._fn[name](self.handle, ctypes.byref(ip), *args), self.PREFIX + name)
        return status, ip.value

    def sync_forward(self):
        """``(status, ip)`` at the next PSB; ip is meaningless when IP_SUPPRESSED is set."""
        return self._sync("sync_forward")

    def sync_backward(self):
        return self._sync("sync_backward")

    def sync_set(self, offset):
        return self._sync("sync_set", offset)

    def cond_branch(self):
        """``(status, taken)`` for the next conditional branch."""
        taken = c_int()
        status = check(self._fn["cond_branch"](self.handle, ctypes.byref(taken)), "pt_qry_cond_branch")
        return status, bool(taken.value)

    def indirect_branch(self):
        """``(status, target ip)`` for the next indirect branch."""
        ip = c_uint64()
        status = check(self._fn["indirect_branch"](self.handle, ctypes.byref(ip)), "pt_qry_indirect_branch")
        return status, ip.value


@dataclass(frozen=True)
class Block:
    """A sequence of ``ninsn`` instructions from ``ip`` to ``end_ip`` (not contiguous in memory)."""

    ip: int
    end_ip: int
    isid: int
    mode: ExecMode
    iclass: InsnClass
    ninsn: int
    raw: bytes
    speculative: bool
    truncated: bool


@dataclass(frozen=True)
class Insn:
    """One traced instruction with its bytes."""

    ip: int
    isid: int
    mode: ExecMode
    iclass: InsnClass
    raw: bytes
    speculative: bool
    truncated: bool


def _block_from_c(c):
    return Block(
        c.ip, c.end_ip, c.isid, ExecMode(c.mode), InsnClass(c.iclass), c.ninsn,
        bytes(c.raw[: c.size]), bool(c.flags & 1), bool(c.flags & 2),
    )  # fmt: skip


def _insn_from_c(c):
    return Insn(
        c.ip, c.isid, ExecMode(c.mode), InsnClass(c.iclass),
        bytes(c.raw[: c.size]), bool(c.flags & 1), bool(c.flags & 2),
    )  # fmt: skip


class _FlowDecoder(_TimedDecoder):
    """Block and instruction decoders: an image, an address space, and next()."""

    _NAMES = (*_TimedDecoder._NAMES, "set_image", "asid", "next")
    _ITEM = None
    _CONVERT = None

    def __init__(self, config, image=None):
        super().__init__(config)
        self._item = self._ITEM()
        self._item_size = ctypes.sizeof(self._ITEM)
        self.image = None
        if image is not None:
            self.set_image(image)

    def set_image(self, image):
        """Decode with ``image`` instead of the decoder's own (empty) image."""
        check(self._fn["set_image"](self.handle, image.handle if image else None), self.PREFIX + "set_image")
        self.image = image

    def asid(self):
        """``(cr3, vmcs)`` of the current address space."""
        asid = pt_asid()
        check(self._fn["asid"](self.handle, ctypes.byref(asid), ctypes.sizeof(pt_asid)), self.PREFIX + "asid")
        return asid.cr3, asid.vmcs

    def next_raw(self):
        """The fast path: the raw status of the next step; the item is in ``self.raw_item``.

        On an error the item may still hold a partial result worth keeping.
        """
        return self._fn["next"](self.handle, self._item, self._item_size)

    @property
    def raw_item(self):
        return self._item

    def unchecked_next(self):
        """A no-argument callable doing ``next_raw`` without ctypes' per-call argument conversion.

        For the decode loop, which calls it millions of times: the arguments
        are converted once here, and the function is called through an
        unprototyped pointer (about half the per-call cost).  It stays valid
        while this decoder is open.
        """
        function = getattr(lib(), self.PREFIX + "next")
        unprototyped = ctypes.CFUNCTYPE(c_int)(ctypes.cast(function, ctypes.c_void_p).value)
        return functools.partial(
            unprototyped, ctypes.c_void_p(self.handle), ctypes.byref(self._item), ctypes.c_size_t(self._item_size)
        )

    def next(self):
        """``(status, item)``; a LibiptError carries any partial item as ``.partial``."""
        status = self.next_raw()
        if status < 0:
            error = LibiptError(status, self.PREFIX + "next")
            error.partial = self._partial()
            raise error
        return status, type(self)._CONVERT(self._item)

    def _partial(self):
        return None


class BlockDecoder(_FlowDecoder):
    """``pt_block_decoder``: the fast decoder, one sequential block per step."""

    PREFIX = "pt_blk_"
    _free_name = "pt_blk_free_decoder"
    _ITEM = pt_block
    _CONVERT = _block_from_c

    def _partial(self):
        return _block_from_c(self._item) if self._item.ninsn else None


class InsnDecoder(_FlowDecoder):
    """``pt_insn_decoder``: one instruction per step (slow through ctypes; for checking)."""

    PREFIX = "pt_insn_"
    _free_name = "pt_insn_free_decoder"
    _ITEM = pt_insn
    _CONVERT = _insn_from_c
