"""libipt 2.x enumerations, with values exactly as in ``intel-pt.h``."""

from enum import IntEnum, IntFlag


class ErrorCode(IntEnum):
    """``enum pt_error_code``: libipt returns these negated."""

    OK = 0
    INTERNAL = 1
    INVALID = 2
    NOSYNC = 3
    BAD_OPC = 4
    BAD_PACKET = 5
    BAD_CONTEXT = 6
    EOS = 7
    BAD_QUERY = 8
    NOMEM = 9
    BAD_CONFIG = 10
    NOIP = 11
    IP_SUPPRESSED = 12
    NOMAP = 13
    BAD_INSN = 14
    NO_TIME = 15
    NO_CBR = 16
    BAD_IMAGE = 17
    BAD_LOCK = 18
    NOT_SUPPORTED = 19
    RETSTACK_EMPTY = 20
    BAD_RETCOMP = 21
    BAD_STATUS_UPDATE = 22
    NO_ENABLE = 23
    EVENT_IGNORED = 24
    OVERFLOW = 25
    BAD_FILE = 26
    BAD_CPU = 27


class CpuVendor(IntEnum):
    """``enum pt_cpu_vendor``."""

    UNKNOWN = 0
    INTEL = 1


class PacketType(IntEnum):
    """``enum pt_packet_type``."""

    INVALID = 0
    UNKNOWN = 1
    PAD = 2
    PSB = 3
    PSBEND = 4
    FUP = 5
    TIP = 6
    TIP_PGE = 7
    TIP_PGD = 8
    TNT_8 = 9
    TNT_64 = 10
    MODE = 11
    PIP = 12
    VMCS = 13
    CBR = 14
    TSC = 15
    TMA = 16
    MTC = 17
    CYC = 18
    STOP = 19
    OVF = 20
    MNT = 21
    EXSTOP = 22
    MWAIT = 23
    PWRE = 24
    PWRX = 25
    PTW = 26


class IpCompression(IntEnum):
    """``enum pt_ip_compression``: how many IP bits a packet carries."""

    SUPPRESSED = 0x0
    UPDATE_16 = 0x1
    UPDATE_32 = 0x2
    SEXT_48 = 0x3
    UPDATE_48 = 0x4
    FULL = 0x6


class ExecMode(IntEnum):
    """``enum pt_exec_mode``."""

    UNKNOWN = 0
    BIT16 = 1
    BIT32 = 2
    BIT64 = 3


class ModeLeaf(IntEnum):
    """``enum pt_mode_leaf``."""

    EXEC = 0x00
    TSX = 0x20


class StatusFlag(IntFlag):
    """``enum pt_status_flag``: the non-negative result of a decoder step."""

    EVENT_PENDING = 1 << 0
    IP_SUPPRESSED = 1 << 1
    EOS = 1 << 2


class EventType(IntEnum):
    """``enum pt_event_type``: every event libipt 2.0 defines."""

    ENABLED = 0
    DISABLED = 1
    ASYNC_DISABLED = 2
    ASYNC_BRANCH = 3
    PAGING = 4
    ASYNC_PAGING = 5
    OVERFLOW = 6
    EXEC_MODE = 7
    TSX = 8
    STOP = 9
    VMCS = 10
    ASYNC_VMCS = 11
    EXSTOP = 12
    MWAIT = 13
    PWRE = 14
    PWRX = 15
    PTWRITE = 16
    TICK = 17
    CBR = 18
    MNT = 19


class InsnClass(IntEnum):
    """``enum pt_insn_class``."""

    ERROR = 0
    OTHER = 1
    CALL = 2
    RETURN = 3
    JUMP = 4
    COND_JUMP = 5
    FAR_CALL = 6
    FAR_RETURN = 7
    FAR_JUMP = 8
    PTWRITE = 9
