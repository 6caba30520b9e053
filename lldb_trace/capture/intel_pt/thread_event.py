"""Intel PT of one thread: its intel_pt perf event and the circular AUX buffer the CPU writes it into.

Design, as in LLDB's per-thread intel-pt collector:

* One event per thread: ``pid=tid, cpu=-1``, user space only
  (``exclude_kernel``, ``exclude_hv``), no ``inherit``.  The kernel refuses
  to mmap an inherited per-thread event (``cpu == -1``), and an inherited
  event would also mix the new threads' packets into one buffer.  So the
  caller traces a new thread by opening another IntelPtThreadEvent for it when
  the debugger reports the thread (clone events, or LLDB's thread list at a stop).
* The AUX area is mapped read-only, which puts it in overwrite ("snapshot")
  mode: a circular buffer that always holds the newest ``-b`` KiB
  (:mod:`.aux_snapshot` finds its oldest byte).  The data area has no pages
  (only the header page), as in LLDB: nothing reads the perf records.
* Reading pauses the event with PERF_EVENT_IOC_DISABLE.  That makes the CPU
  flush its internal packet buffers to memory and brings ``aux_head`` up to
  date.  The buffer is then copied and the event re-enabled
  (PERF_EVENT_IOC_ENABLE).
"""

from ...perf.attr import perf_event_attr
from .aux_snapshot import snapshot_bytes, snapshot_head
from .perf_event import PerfEvent
from .perf_event_errors import PARANOID_PATH
from .pmu import SOFTWARE_HINT, SYSFS_ROOT, IntelPtUnavailableError, buffer_pages, check_available, config_for


class IntelPtThreadEvent:
    """Intel PT of one thread into a circular ``buffer_kb`` KiB buffer, read on demand.

    ``IntelPtThreadEvent(tid, buffer_kb)`` checks availability, opens the
    event disabled, maps the buffers, then enables it.  :meth:`read` returns
    the trace bytes, oldest first.  :meth:`changed` says whether :meth:`read`
    would return something new.  :meth:`close` stops tracing and frees
    everything.  Threads created later are not followed: open an
    IntelPtThreadEvent for each of them (see the module notes).  Passing
    ``pmu`` (from :func:`~.pmu.check_available` or
    :func:`~.pmu.pmu_info`) skips the availability check.
    """

    def __init__(
        self,
        tid,
        buffer_kb=4,
        *,
        tsc=False,
        psb_period=None,
        pmu=None,
        sysfs_root=SYSFS_ROOT,
        paranoid_path=PARANOID_PATH,
    ):
        pages = buffer_pages(buffer_kb)
        if pmu is None:
            pmu = check_available(sysfs_root, paranoid_path)
        attr = perf_event_attr(type=pmu.type, config=config_for(pmu, tsc, psb_period))
        attr.disabled = 1
        attr.exclude_kernel = 1
        attr.exclude_hv = 1
        event = PerfEvent.open(attr, tid, -1, what=f"Intel PT for thread {tid}", hint=SOFTWARE_HINT)
        try:
            event.map_ring(0)
            event.map_aux(pages, overwrite=True)
            event.enable()
        except BaseException:
            event.close()
            raise
        self._attach(tid, event)

    @classmethod
    def from_event(cls, tid, event):
        """An IntelPtThreadEvent over an already open and mapped event (any object with PerfEvent's
        ``aux_head``, ``aux_bytes()``, ``enabled``, ``enable()``, ``disable()`` and ``close()``)."""
        trace = cls.__new__(cls)
        trace._attach(tid, event)
        return trace

    def _attach(self, tid, event):
        self.tid = tid
        self._event = event
        self._last_head = 0

    @property
    def buffer_size(self):
        return self._event.aux_size

    @property
    def closed(self):
        return self._event is None

    def _live_event(self):
        if self._event is None:
            raise IntelPtUnavailableError(f"the Intel PT trace of thread {self.tid} is closed")
        return self._event

    def changed(self):
        """Whether ``aux_head`` moved since the last read (or since the start).

        The kernel updates ``aux_head`` when the thread is scheduled out or
        the event disabled, so the answer is current for a stopped thread,
        such as one stopped in the debugger.  A buffer that wrapped exactly
        a whole number of times reads as unchanged.
        """
        return self._live_event().aux_head != self._last_head

    def read(self):
        """The trace so far, oldest byte first: pause (which flushes), copy, resume."""
        event = self._live_event()
        was_enabled = event.enabled
        if was_enabled:
            event.disable()
        try:
            raw_head = event.aux_head
            ring = event.aux_bytes()
        finally:
            if was_enabled:
                event.enable()
        self._last_head = raw_head
        return snapshot_bytes(ring, snapshot_head(ring, raw_head))

    def close(self):
        if self._event is not None:
            event, self._event = self._event, None
            event.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
