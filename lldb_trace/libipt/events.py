"""``struct pt_event`` as a Python value.

Each event type's union member is unpacked with ``struct`` at the offsets GCC
gives it; bit-fields that follow narrower members live in the byte after them.
An ``ip`` that libipt marks as suppressed is reported as ``None``.
"""

import struct
from dataclasses import dataclass, field

from .enums import EventType, ExecMode

_FLAG_IP_SUPPRESSED = 1 << 0
_FLAG_STATUS_UPDATE = 1 << 1
_FLAG_HAS_TSC = 1 << 2


def _bits(value, *names):
    return {name: bool(value >> index & 1) for index, name in enumerate(names)}


def _enabled(v):
    ip, flags = struct.unpack_from("<QB", v)
    return {"ip": ip, **_bits(flags, "resumed")}


def _ip_only(v):
    return {"ip": struct.unpack_from("<Q", v)[0]}


def _async_disabled(v):
    at, ip = struct.unpack_from("<QQ", v)
    return {"at": at, "ip": ip}


def _async_branch(v):
    source, target = struct.unpack_from("<QQ", v)
    return {"from_ip": source, "to_ip": target}


def _paging(v):
    cr3, flags = struct.unpack_from("<QB", v)
    return {"cr3": cr3, **_bits(flags, "non_root")}


def _async_paging(v):
    cr3, flags, ip = struct.unpack_from("<QB7xQ", v)
    return {"cr3": cr3, **_bits(flags, "non_root"), "ip": ip}


def _exec_mode(v):
    mode, ip = struct.unpack_from("<I4xQ", v)
    return {"mode": ExecMode(mode) if mode in ExecMode._value2member_map_ else mode, "ip": ip}


def _tsx(v):
    ip, flags = struct.unpack_from("<QB", v)
    return {"ip": ip, **_bits(flags, "speculative", "aborted")}


def _vmcs(v):
    return {"base": struct.unpack_from("<Q", v)[0]}


def _async_vmcs(v):
    base, ip = struct.unpack_from("<QQ", v)
    return {"base": base, "ip": ip}


def _mwait(v):
    ip, hints, ext = struct.unpack_from("<QII", v)
    return {"ip": ip, "hints": hints, "ext": ext}


def _pwre(v):
    state, sub_state, flags = struct.unpack_from("<BBB", v)
    return {"state": state, "sub_state": sub_state, **_bits(flags, "hw")}


def _pwrx(v):
    last, deepest, flags = struct.unpack_from("<BBB", v)
    return {"last": last, "deepest": deepest, **_bits(flags, "interrupt", "store", "autonomous")}


def _ptwrite(v):
    ip, size, payload = struct.unpack_from("<QB7xQ", v)
    return {"ip": ip, "size": size, "payload": payload}


def _cbr(v):
    return {"ratio": struct.unpack_from("<H", v)[0]}


def _mnt(v):
    return {"payload": struct.unpack_from("<Q", v)[0]}


_VARIANTS = {
    EventType.ENABLED: _enabled,
    EventType.DISABLED: _ip_only,
    EventType.ASYNC_DISABLED: _async_disabled,
    EventType.ASYNC_BRANCH: _async_branch,
    EventType.PAGING: _paging,
    EventType.ASYNC_PAGING: _async_paging,
    EventType.OVERFLOW: _ip_only,
    EventType.EXEC_MODE: _exec_mode,
    EventType.TSX: _tsx,
    EventType.STOP: lambda v: {},
    EventType.VMCS: _vmcs,
    EventType.ASYNC_VMCS: _async_vmcs,
    EventType.EXSTOP: _ip_only,
    EventType.MWAIT: _mwait,
    EventType.PWRE: _pwre,
    EventType.PWRX: _pwrx,
    EventType.PTWRITE: _ptwrite,
    EventType.TICK: _ip_only,
    EventType.CBR: _cbr,
    EventType.MNT: _mnt,
}


@dataclass(frozen=True)
class Event:
    """A decoder event; type-specific values are in ``data`` and readable as attributes."""

    type: EventType
    ip_suppressed: bool
    status_update: bool
    tsc: int | None
    lost_mtc: int
    lost_cyc: int
    data: dict = field(default_factory=dict)

    def __getattr__(self, name):
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(f"{self.type.name} event has no {name!r}") from None


def from_c(c):
    """Convert a filled ``pt_event``."""
    kind = EventType(c.type)
    data = _VARIANTS[kind](bytes(c.variant))
    suppressed = bool(c.flags & _FLAG_IP_SUPPRESSED)
    if suppressed and "ip" in data:
        data["ip"] = None
    return Event(
        type=kind,
        ip_suppressed=suppressed,
        status_update=bool(c.flags & _FLAG_STATUS_UPDATE),
        tsc=c.tsc if c.flags & _FLAG_HAS_TSC else None,
        lost_mtc=c.lost_mtc,
        lost_cyc=c.lost_cyc,
        data=data,
    )
