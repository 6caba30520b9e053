"""Whether a process the recorded program created shares its memory: ``clone`` or ``clone3`` with CLONE_VM and
without CLONE_THREAD makes a process, not a thread, that runs in the same memory.  The recorder lets such a
process go untraced as it does a fork's copy, but its writes land in the memory the recording's values come from:
the bundle names it among the tasks that ran untraced in that memory (``untracedThreads``), so the values in the
past take memory as shared.  And its memory is the program's own, so the breakpoint at ``main`` is not put back
in it as in a fork's copy (that removed the program's own, which never stopped there)."""

from ...x86.syscall_memory import call_number
from . import ptrace

_CLONE, _CLONE3 = 56, 435
_CLONE_VM, _CLONE_VFORK = 0x100, 0x4000


def shares_memory(creator, event):
    """At ``creator``'s creation ``event`` (a ptrace stop in its clone, clone3, fork or vfork): whether the new task
    runs in the creator's memory, not a copy (vfork's child does until it execs or exits, while the creator waits:
    not counted).  Where the flags cannot be read, it is taken to."""
    if event == ptrace.PTRACE_EVENT_VFORK:
        return False
    try:
        registers = ptrace.get_regs(creator)
        number = call_number(registers["orig_rax"])
        if number == _CLONE:
            flags = registers["rdi"]
        elif number == _CLONE3:
            flags = ptrace.peek_word(creator, registers["rdi"])  # struct clone_args begins with its flags
        else:
            return False  # fork: a copy
    except ptrace.PtraceError:
        return True
    return bool(flags & _CLONE_VM) and not flags & _CLONE_VFORK
