"""A ThreadStop as the bundles' ``stopReason`` object, both ways (the JSON bundles and a perf.data's stop section).

Two forms, as the schemas say: a signal (``{"signal": 11, "description": ..., "pc": "0x40113e"}``) or an
exit (``{"exited": true, "exitStatus": 0}``, the status left out when it is not known).
"""

from .model import ThreadStop
from .schemas import address_value


def stop_json(stop):
    """The ``stopReason`` object of ``stop``."""
    if stop.exited:
        entry = {"exited": True}
        if stop.exit_status is not None:
            entry["exitStatus"] = stop.exit_status
    else:
        entry = {"signal": stop.signal}
        if stop.description:
            entry["description"] = stop.description
    if stop.pc is not None:
        entry["pc"] = f"0x{stop.pc:x}"
    return entry


def stop_from_json(entry):
    """The ThreadStop of a schema-valid ``stopReason`` object."""
    pc = address_value(entry["pc"]) if "pc" in entry else None
    if entry.get("exited"):
        return ThreadStop(pc=pc, exited=True, exit_status=entry.get("exitStatus"))
    return ThreadStop(entry["signal"], entry.get("description"), pc)
