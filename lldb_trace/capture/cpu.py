"""The CPU a captured trace names in its bundle: decoders apply that CPU's errata, and refuse an unknown one.

Software-made streams (the ptrace recorder, ``pt start --backend software``) name SOFTWARE_CPU: their packet
scheme is checked to decode exactly, in libipt and in native LLDB, with its errata.  Hardware streams (the
intel-pt backend) name the CPU that wrote them, read from /proc/cpuinfo.
"""

from ..bundle.model import CpuInfo

SOFTWARE_CPU = CpuInfo("intel", 6, 85, 4)
CPUINFO_PATH = "/proc/cpuinfo"
_FIELDS = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "stepping": "stepping"}


def host_cpu(cpuinfo_path=None):
    """This machine's CPU, as the first processor of ``/proc/cpuinfo`` describes it (vendor "unknown" if not Intel)."""
    found = {}
    try:
        with open(cpuinfo_path or CPUINFO_PATH) as lines:
            for line in lines:
                name, _, value = line.partition(":")
                key = _FIELDS.get(name.strip())
                if key is not None and key not in found:
                    found[key] = value.strip()
                if not line.strip() and found:
                    break  # the first processor's block ends here
    except OSError:
        return CpuInfo("unknown", 0, 0, 0)
    numbers = [int(found[key]) if found.get(key, "").isdigit() else 0 for key in ("family", "model", "stepping")]
    return CpuInfo("intel" if found.get("vendor") == "GenuineIntel" else "unknown", *numbers)
