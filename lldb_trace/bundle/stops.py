"""A ThreadStop as the bundles' ``stopReason`` object, both ways (the JSON bundles and a perf.data's stop section).

Two forms, as the schemas say: a signal (``{"signal": 11, "description": ..., "pc": "0x40113e"}``) or an
exit (``{"exited": true, "exitStatus": 0}``, the status left out when it is not known).
"""

from .model import ThreadStop
from .schemas import address_value


def stop_json(stop):
    """The ``stopReason`` object of ``stop``."""
    if stop.exited:
        reason = {"exited": True}
        if stop.exit_status is not None:
            reason["exitStatus"] = stop.exit_status
    else:
        reason = {"signal": stop.signal}
        if stop.description:
            reason["description"] = stop.description
    if stop.pc is not None:
        reason["pc"] = f"0x{stop.pc:x}"
    return reason


def stop_from_json(reason):
    """The ThreadStop of a schema-valid ``stopReason`` object."""
    pc = address_value(reason["pc"]) if "pc" in reason else None
    if reason.get("exited"):
        return ThreadStop(pc=pc, exited=True, exit_status=reason.get("exitStatus"))
    return ThreadStop(reason["signal"], reason.get("description"), pc)
