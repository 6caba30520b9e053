"""Capture: recording a process's control flow as Intel PT streams (no ``lldb`` import).

- The exact recorder (``lldb-trace record``): session.py single-steps every
  thread with ptrace (ptrace.py, process_view.py); thread_recorder.py turns
  each step into packets (pt_writer.py) and ground truth (ground_truth.py);
  bundle_writer.py writes the bundle through bundle.saver plus its own files.
- The live backends behind ``pt start``: software_backend.py (the same
  recorder, fed by LLDB's stepping, with routes.py and the emulator in
  emulation.py to run stretches at full speed) and intel_pt_backend.py (the
  CPU's Intel PT through perf_event_open: perf_event.py, intel_pt_pmu.py,
  intel_pt_event.py, aux_snapshot.py).
"""
