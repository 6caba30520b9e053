"""Capture: recording a process's control flow as Intel PT streams (no ``lldb`` import).

One package per recorder, and what they share:

- ptrace_recorder/: the exact recorder behind ``lldb-trace record``; it
  single-steps every thread with ptrace and writes a bundle with ground truth.
- live_software/: the ``pt start --backend software`` backend; LLDB steps the
  thread, a look-ahead to the next branch and an emulator let it run
  stretches at full speed.
- intel_pt/: the ``pt start --backend intel-pt`` backend; the CPU's Intel PT
  through perf_event_open.
- encoder/: what both software recorders drive: a thread's steps become a PT
  packet stream and its ground truth.
- cpu.py: the CPU a recording names in its bundle; process_view.py: a live
  process seen through /proc.
"""
