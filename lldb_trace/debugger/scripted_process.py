"""A ScriptedProcess that shows a traced process at each thread's position in its history.

LLDB builds the process from these classes (by dotted name) when a trace
target is "launched" with the ScriptedProcess plugin.  Each thread stands at
its history position (lldb_trace.history): at first the end of its trace, or
where the bundle says a signal stopped it (with that signal as its stop
reason, as live LLDB showed it), its stop reason "exited with status N" when
it exited, "end of trace" when the bundle does not say how it stopped; after
``pt goto`` or a step through history,
at that instruction, its stop reason naming the position.  Its frames are the
calls open there.  The only register the trace knows is the pc, so that is
the only register shown, unless values are known there (shown_state.py: a
core file at the trace's end, values recovered along the trace): then the
known registers are shown, and LLDB asks for them again at every stop
(register_layout.py).  Memory is the modules' code and read-only data, and
what is known at the selected thread's position.

A movement updates the position, then resumes this process synchronously:
LLDB then reads the threads and their frames again (history_view.py).
"""

import struct

import lldb
from lldb.plugins.scripted_process import ScriptedProcess, ScriptedThread

from .. import progress
from ..errors import LldbTraceError
from ..progress import WorkInterruptedError
from ..values.process_values import values_of
from . import history_watchpoints, registry, unwind_check
from .histories import breakpoint_locations, history_of, shown_frame_count, shown_frames, unwound_frame_count
from .progress_reporter import LldbReporter
from .register_layout import register_bytes, register_info, register_values
from .shown_state import ShownState, shown_state, unmapped

# A stop that is no signal (an exit, the end of the trace, a position in history) is a SIGSTOP stop worded as
# what it is: LLDB resumes a scripted thread whose stop reason is none or trace, and a signal it does not stop
# for (0 included); an exception stop reads "EXC_BAD_ACCESS" whatever its description off Apple
# (ScriptedThread::CalculateStopInfo).  SIGSTOP is what LLDB itself shows for a process it holds (an interrupt).
_HELD = 19


def _held(description):
    return {"type": lldb.eStopReasonSignal, "data": {"signal": _HELD, "desc": description}}


WHY_UNKNOWN = (
    "a trace records which instructions ran, not the data they used, and the known states (a core file where the"
    " trace ends, the state where recording started) and the instructions between do not determine it"
)
UNKNOWN_MEMORY = f"is not known at this position: {WHY_UNKNOWN}"
MAPPED_FROM = 0x10000  # Linux's vm.mmap_min_addr: no process maps memory below it
NOTHING_MAPPED = f"no process maps memory below {MAPPED_FROM:#x} (a null pointer, or a field through one?)"
NOT_MAPPED_AT_CORE = "the process mapped nothing there when its core was taken (a wild pointer?)"
_asked = [None]  # the address the user's memory read names (commands/unknown_values.py), for the message


def name_asked_address(address):
    """Remember the address a command asks for: LLDB reads the whole cache line around it, from its start."""
    _asked[0] = address


def _unknown_memory(addr, size, state=None):
    asked = _asked[0]
    named = asked if asked is not None and addr <= asked < addr + size else addr
    if addr + size <= MAPPED_FROM:
        return f"memory at {named:#x} is not mapped: {NOTHING_MAPPED}"
    if unmapped(state, named):
        return f"memory at {named:#x} is not mapped: {NOT_MAPPED_AT_CORE}"
    return (
        f"memory at {asked:#x} {UNKNOWN_MEMORY}"
        if asked is not None and addr <= asked < addr + size
        else (f"memory there {UNKNOWN_MEMORY}")
    )


_PC_ONLY = {
    "sets": ["Traced registers"],
    "registers": [
        {
            "name": "rip",
            "alt-name": "pc",
            "bitsize": 64,
            "offset": 0,
            "encoding": "uint",
            "format": "hex",
            "set": 0,
            "gcc": 16,
            "dwarf": 16,
            "generic": "pc",
        }
    ],
}


class TraceProcess(ScriptedProcess):
    """The process of one ProcessTrace; ``args`` carries its registry key."""

    def __init__(self, exe_ctx, args):
        super().__init__(exe_ctx, args)
        self.trace = registry.by_key(args.GetValueForKey("key").GetStringValue(100))
        self.pid = self.trace.pid
        self.loaded_images = [_image(module) for module in self.trace.process.modules]
        self.finding_state = False  # a thread's ShownState is being found: memory reads serve the modules only
        for index, tid in enumerate(self.trace.tids):
            self.threads[index] = TraceThread(self, tid, index)

    def read_memory_at_address(self, addr, size, error):
        """The modules' code and read-only data; fewer bytes than asked where they end (LLDB reads in whole
        cache lines); an error where nothing there is known, naming the address the user gave when a command
        said it (LLDB asks for its cache line, from an address the user never wrote)."""
        state = self._reading_state()
        data = b""
        try:
            if size:
                with progress.reporting(LldbReporter(self.target.GetDebugger())):  # it may solve windows
                    data = state.read_memory(addr, size) if state else values_of(self.trace).read_code()(addr, size)
        except WorkInterruptedError:
            error.SetErrorString(f"reading memory at {addr:#x} was interrupted: ask again")
            return lldb.SBData()
        if size and not data:
            error.SetErrorString(_unknown_memory(addr, size, state))
            return lldb.SBData()
        result = lldb.SBData()
        result.SetDataWithOwnership(error, data, lldb.eByteOrderLittle, 8)  # copies: ``data`` may go away
        return result

    def _reading_state(self):
        """The selected thread's ShownState for a memory read; None (the modules' bytes only) for a read LLDB
        makes while a thread's state is being found (finding it asks LLDB things that read memory), or when
        finding it fails."""
        if self.finding_state:
            return None
        try:
            return self.selected_thread_state()
        except Exception as error:  # a bug, or a known state that cannot be read: the modules' bytes are still right
            say_why_unknown(self.target, error)
            return None

    def selected_thread_state(self):
        """The ShownState of the thread the user has selected: memory is read at its position."""
        selected = self.target.GetProcess().GetSelectedThread()
        tid = selected.GetThreadID() if selected.IsValid() else self.trace.tids[0]
        thread = next((t for t in self.threads.values() if t.tid == tid), None) or self.threads[0]
        return thread.shown()

    def is_alive(self):
        return True

    def create_breakpoint(self, addr, error):
        return True  # nothing to insert: movements through history stop at breakpoint addresses themselves

    def get_scripted_thread_plugin(self):
        return f"{__name__}.{TraceThread.__name__}"


def _image(module):
    """An item of loaded_images; the uuid lets LLDB reuse the module the target already has."""
    image = {"path": str(module.path), "load_addr": module.load_address}
    if module.build_id:
        image["uuid"] = module.build_id
    return image


_said: set[tuple[int, str]] = set()  # (target's debugger id, message) told once


def say_why_unknown(target, error):
    """Tell the user, once, why no value is shown: a known state the recovery refused (register states of another
    recording, a start state elsewhere) reads as "not known" everywhere else.  A bug stays silent here: the
    commands that hit it say so."""
    if not isinstance(error, LldbTraceError):
        return
    debugger = target.GetDebugger()
    key = (debugger.GetID(), str(error))
    if key not in _said:
        _said.add(key)
        debugger.GetErrorFile().Write(f"warning: values at past positions are not shown: {error}\n".encode())


class TraceThread(ScriptedThread):
    """A traced thread, standing at its history position (the end of its trace, at first)."""

    def __init__(self, process, tid, index):
        super().__init__(process, None)
        self.tid = tid
        self.idx = index
        self.trace = process.trace
        self.stop = self.trace.thread_stop(tid)

    def get_register_info(self):
        """The registers known at the thread's position (LLDB asks again at each stop); the pc alone while
        LLDB's base class is still making the thread."""
        if not hasattr(self, "trace"):
            self.register_info = _PC_ONLY
            return _PC_ONLY
        registers, fpregs, xstate, unwinds = self._registers()
        self.register_info = register_info(register_values(registers, fpregs, xstate), unwinds)
        return self.register_info

    def shown(self):
        """The ShownState at the thread's position (kept while it stands there: memory reads ask often)."""
        process = self.originating_process
        if process.finding_state:  # asked again while finding it (LLDB read memory meanwhile): what is kept
            return getattr(self, "_shown", None) or ShownState(
                {"rip": self.trace.end_ip(self.tid) or 0}, unchanging=values_of(self.trace).read_code()
            )
        process.finding_state = True
        try:
            history, pc = self._history(), self._pc()
            key = (history.position if history is not None else None, pc)
            if getattr(self, "_shown_key", None) != key:
                with progress.reporting(LldbReporter(self.target.GetDebugger())):  # Ctrl-C: the pc alone
                    self._shown = shown_state(self.trace, self.tid, history, pc)
                self._shown_key = key
            if self._shown.unwinds and unwind_check.refused(self.trace, self.tid, key[0]):
                self._shown.unwinds = False  # LLDB's unwinding went wrong here: the trace's frames
            return self._shown
        finally:
            process.finding_state = False

    def _registers(self):
        """``(registers, fpregs, xstate, whether LLDB unwinds the frames from them)`` at the thread's position."""
        try:
            state = self.shown()
        except Exception as error:  # a bug, or a known state that cannot be read: the pc is still right
            say_why_unknown(self.target, error)
            return {"rip": self._pc()}, None, None, False
        return state.registers, state.fpregs, state.xstate, state.unwinds

    def _history(self):
        """The thread's ThreadHistory; None until its whole trace is decoded, or when it has no instructions."""
        decoded = self.trace.decoded_if_done(self.tid)
        if decoded is None or not decoded.end_ip:
            return None
        return history_of(self.target, self.tid, self.trace)

    def _pc(self):
        history = self._history()
        if history is not None:
            return history.pc
        end_ip = self.trace.end_ip(self.tid)  # a large trace, decoded only at its end so far
        if end_ip:
            return end_ip
        if self.stop is not None and self.stop.pc is not None:
            return self.stop.pc
        return 0

    def get_stop_reason(self):
        try:
            return self._stop_reason()
        except Exception as error:  # a bug: without a stop reason LLDB would resume the thread, forever
            desc = f"lldb_trace internal error: {type(error).__name__}: {error} (please report it)"
            return _held(desc)

    def _stop_reason(self):
        if not self._pc():
            return _held(self._why_no_pc())
        history = self._history()
        if history is not None and not history.at_end:
            return _held(self._past_description(history))
        if self.stop is None:
            return _held("end of trace")  # how the thread stopped was not recorded (a perf record's trace)
        if self.stop.signal is None:
            return _held(self.stop.text)  # it exited
        data = {"signal": self.stop.signal}
        if self.stop.description:
            data["desc"] = self.stop.description
        return {"type": lldb.eStopReasonSignal, "data": data}

    def _past_description(self, history):
        """The stop reason in the past: the breakpoint there, the position, where the traced stack begins."""
        try:
            shown = shown_frames(self.target, history)
        except Exception as error:  # a bug: LLDB would resume a thread without a stop reason, forever
            return f"history: {history.describe()}; its frames could not be found ({type(error).__name__}: {error})"
        breakpoint = breakpoint_locations(self.target, history).get(history.pc)
        watched = history_watchpoints.stop_at(self.trace, self.tid, history.position)
        at = f"watchpoint {watched[0]}, " if watched else f"breakpoint {breakpoint}, " if breakpoint else ""
        oldest = ""
        if shown and shown[-1][0].outermost_traced:  # numbered as bt lists them
            count = unwound_frame_count if self._unwinds() else shown_frame_count
            oldest = f"; frame #{count(self.target, shown) - 1} is the oldest traced frame"
        return f"history: {at}{history.describe()}{oldest}"

    def _why_no_pc(self):
        if not self.trace.has_trace(self.tid):
            return "no trace of its own: where it stopped is unknown"
        return "its trace holds no instructions: where it stopped is unknown"

    def _unwinds(self):
        """Whether LLDB unwinds the frames itself at the position (from a core's or a recorder's registers)."""
        try:
            return self.shown().unwinds
        except Exception:  # a bug, or an unreadable core: the trace's frames
            return False

    def get_stackframes(self):
        if self._unwinds():
            return []  # a core's state: LLDB unwinds the frames from its registers and memory
        history = self._history()
        if history is None:
            pc = self._pc()
            return [{"idx": 0, "pc": pc}] if pc else []
        try:
            shown = shown_frames(self.target, history)
        except Exception:  # a bug (the stop reason says it): frame 0 alone rather than no stop at all
            return [{"idx": 0, "pc": history.pc}]
        return [{"idx": index, "pc": pc} for index, (_frame, pc) in enumerate(shown)]

    def get_register_context(self):
        """The values of the registers known at the position, laid out as get_register_info says there (LLDB
        asks for them at a stop before it asks for the layout again: both come from the position)."""
        if not hasattr(self, "trace"):
            return struct.pack("<Q", 0)
        registers, fpregs, xstate, _ = self._registers()
        return register_bytes(register_values(registers, fpregs, xstate))
