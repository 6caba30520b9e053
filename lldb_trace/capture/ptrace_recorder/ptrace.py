"""Linux ptrace through ctypes: launch a program stopped, single-step its threads.

Only what the software recorder needs: launching under PTRACE_TRACEME (with
ASLR off, as debuggers do), stepping, continuing, reading registers and
memory, and clone/fork/exit bookkeeping.  Every failing call raises PtraceError
with the errno text.
"""

import contextlib
import ctypes
import os
import signal
from ctypes import c_int, c_long, c_void_p

from ...errors import LldbTraceError

PTRACE_TRACEME = 0
PTRACE_PEEKTEXT = 1
PTRACE_PEEKUSER = 3
PTRACE_POKETEXT = 4
PTRACE_POKEUSER = 6
PTRACE_CONT = 7
PTRACE_SINGLESTEP = 9
PTRACE_GETREGS = 12
PTRACE_GETFPREGS = 14
PTRACE_DETACH = 17
PTRACE_SETOPTIONS = 0x4200
PTRACE_GETEVENTMSG = 0x4201
PTRACE_GETSIGINFO = 0x4202
PTRACE_GETREGSET = 0x4204
NT_X86_XSTATE = 0x202
MOST_XSTATE = 1 << 16  # bytes: the XSAVE area with every component known today (AMX included) takes 11 KiB

PTRACE_O_TRACEFORK = 0x2
PTRACE_O_TRACEVFORK = 0x4
PTRACE_O_TRACECLONE = 0x8
PTRACE_O_TRACEEXIT = 0x40
PTRACE_O_EXITKILL = 0x100000
PTRACE_EVENT_FORK = 1
PTRACE_EVENT_VFORK = 2
PTRACE_EVENT_CLONE = 3
PTRACE_EVENT_EXIT = 6  # a thread about to exit, its registers and memory still there
CREATION_EVENTS = (PTRACE_EVENT_FORK, PTRACE_EVENT_VFORK, PTRACE_EVENT_CLONE)  # a new task: its id is the message

ADDR_NO_RANDOMIZE = 0x0040000
WALL = 0x40000000  # __WALL: wait for threads too

# struct user_regs_struct (x86-64), in its order: what PTRACE_GETREGS and a core's NT_PRSTATUS hold.
USER_REGS = (
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi",
    "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
)  # fmt: skip
PTRACE_NAMES = {"rflags": "eflags"}  # TRACKED names (machine_state.py) whose USER_REGS name differs
SIGINFO_SIZE = 128
FPREGS_SIZE = 512  # struct user_fpregs_struct: the FXSAVE area (x87, MXCSR, xmm0-15)
# Offsets into struct user_regs_struct, in bytes.
REG_RIP = 16 * 8
REG_RAX = 10 * 8
REG_ORIG_RAX = 15 * 8

_libc = ctypes.CDLL(None, use_errno=True)
_ptrace = _libc.ptrace
_ptrace.restype = c_long
_ptrace.argtypes = [c_long, c_int, c_void_p, c_void_p]
_tgkill = _libc.tgkill
_tgkill.restype = c_int
_tgkill.argtypes = [c_int, c_int, c_int]
_personality = _libc.personality
_personality.restype = c_int
_personality.argtypes = [ctypes.c_ulong]


class PtraceError(LldbTraceError):
    """A ptrace call failed."""


def ptrace(request, tid=0, addr=0, data=0):
    ctypes.set_errno(0)
    result = _ptrace(request, tid, addr, data)
    if result == -1:
        err = ctypes.get_errno()
        if err:
            raise PtraceError(f"ptrace({request}) on {tid}: {os.strerror(err)}")
    return result


def launch(program, args, env=None, aslr=False):
    """Fork and exec ``program`` under ptrace; returns the pid, stopped after exec.

    A failed exec is reported as OSError from the parent (errno carried over a
    close-on-exec pipe, as subprocess does).
    """
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # child: only async-signal-safe work until exec
        try:
            os.close(read_end)
            if not aslr:
                _personality(ADDR_NO_RANDOMIZE)
            _ptrace(PTRACE_TRACEME, 0, None, None)
            if env is None:
                os.execv(program, [program, *args])
            os.execve(program, [program, *args], env)
        except OSError as exc:
            os.write(write_end, str(exc.errno).encode())
        finally:
            os._exit(127)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        failure = pipe.read()
    if failure:
        os.waitpid(pid, 0)
        code = int(failure)
        raise OSError(code, os.strerror(code), program)
    _, status = os.waitpid(pid, 0)
    if not os.WIFSTOPPED(status) or os.WSTOPSIG(status) != signal.SIGTRAP:
        raise PtraceError(f"{program} did not stop after exec (wait status {status:#x})")
    # Every new task stops first, so the recorder sees it: a thread to record, or a process to let go.
    # Exits stop too, so the state where the recording ends can be saved while the process is still there.
    options = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL
    ptrace(PTRACE_SETOPTIONS, pid, 0, options)
    return pid


def get_rip(tid):
    return ptrace(PTRACE_PEEKUSER, tid, REG_RIP) & 0xFFFFFFFFFFFFFFFF


def get_regs(tid):
    """Every register of struct user_regs_struct, by name (USER_REGS), as unsigned 64-bit values."""
    regs = (ctypes.c_ulonglong * len(USER_REGS))()
    read_regs(tid, regs)
    return dict(zip(USER_REGS, regs, strict=True))


def read_regs(tid, regs):
    """Fills ``regs`` (a ctypes array of len(USER_REGS) c_ulonglong) with the thread's struct user_regs_struct."""
    ptrace(PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))


def get_fpregs(tid):
    """The thread's FXSAVE area (struct user_fpregs_struct, FPREGS_SIZE bytes)."""
    area = ctypes.create_string_buffer(FPREGS_SIZE)
    ptrace(PTRACE_GETFPREGS, tid, 0, ctypes.addressof(area))
    return area.raw


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def get_xstate(tid):
    """The thread's XSAVE area as a core's NT_X86_XSTATE note holds it (XCR0 at byte 464), or None where the
    kernel has none to give."""
    area = ctypes.create_string_buffer(MOST_XSTATE)
    vector = _IoVec(ctypes.addressof(area), MOST_XSTATE)
    try:
        ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, ctypes.addressof(vector))
    except PtraceError:
        return None
    return area.raw[: vector.length]


def get_siginfo(tid):
    """The siginfo_t (128 bytes) of the signal thread ``tid`` is stopped for."""
    info = ctypes.create_string_buffer(SIGINFO_SIZE)
    ptrace(PTRACE_GETSIGINFO, tid, 0, ctypes.addressof(info))
    return info.raw


def set_rip(tid, rip):
    ptrace(PTRACE_POKEUSER, tid, REG_RIP, rip)


def peek_word(tid, address):
    return ptrace(PTRACE_PEEKTEXT, tid, address) & 0xFFFFFFFFFFFFFFFF


def poke_word(tid, address, word):
    ptrace(PTRACE_POKETEXT, tid, address, ctypes.c_long(word - (1 << 64) if word >= 1 << 63 else word).value)


def step(tid, sig=0):
    ptrace(PTRACE_SINGLESTEP, tid, 0, sig)


def cont(tid, sig=0):
    ptrace(PTRACE_CONT, tid, 0, sig)


def detach(tid):
    """Let a stopped tracee run on untraced (its pending stop signal dropped)."""
    ptrace(PTRACE_DETACH, tid, 0, 0)


def event_message(tid):
    message = ctypes.c_ulong()
    ptrace(PTRACE_GETEVENTMSG, tid, 0, ctypes.addressof(message))
    return message.value


def wait_any(block=True):
    """``(tid, status)`` of the next traced thread to change state; ``(None, None)`` when no child is left or,
    without ``block``, none has changed state."""
    while True:
        try:
            tid, status = os.waitpid(-1, WALL | (0 if block else os.WNOHANG))
        except InterruptedError:
            continue
        except ChildProcessError:
            return None, None
        return (tid, status) if tid else (None, None)


def stop_thread(pid, tid):
    """Send SIGSTOP to thread ``tid`` of process ``pid`` alone (its wait then reports the stop)."""
    ctypes.set_errno(0)
    if _tgkill(pid, tid, signal.SIGSTOP) == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def kill(pid):
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def end(pid):
    """Kill tracee ``pid`` and reap it.  Traced with PTRACE_O_TRACEEXIT it stops once more on its way out, and
    stays there until continued: a tracee left so would hold every later wait for any child."""
    kill(pid)
    while True:
        try:
            _, status = os.waitpid(pid, WALL)
        except ChildProcessError:
            return
        if not os.WIFSTOPPED(status):
            return
        with contextlib.suppress(PtraceError):
            cont(pid)
