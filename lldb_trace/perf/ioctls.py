"""The ioctl requests a perf event fd takes (``PERF_EVENT_IOC_*`` of <linux/perf_event.h>, x86-64 numbering)."""


def _ioc(direction, number, size):
    """Linux's _IOC(dir, '$', nr, size) for x86 (dir: 0 none, 1 write, 2 read, 3 both)."""
    return (direction << 30) | (size << 16) | (ord("$") << 8) | number


PERF_EVENT_IOC_ENABLE = _ioc(0, 0, 0)
PERF_EVENT_IOC_DISABLE = _ioc(0, 1, 0)
PERF_EVENT_IOC_REFRESH = _ioc(0, 2, 0)
PERF_EVENT_IOC_RESET = _ioc(0, 3, 0)
PERF_EVENT_IOC_PERIOD = _ioc(1, 4, 8)
PERF_EVENT_IOC_SET_OUTPUT = _ioc(0, 5, 0)
PERF_EVENT_IOC_SET_FILTER = _ioc(1, 6, 8)
PERF_EVENT_IOC_ID = _ioc(2, 7, 8)
PERF_EVENT_IOC_SET_BPF = _ioc(1, 8, 4)
PERF_EVENT_IOC_PAUSE_OUTPUT = _ioc(1, 9, 4)
PERF_EVENT_IOC_QUERY_BPF = _ioc(3, 10, 8)
PERF_EVENT_IOC_MODIFY_ATTRIBUTES = _ioc(1, 11, 8)
PERF_IOC_FLAG_GROUP = 1  # with ENABLE/DISABLE/RESET: the whole group
