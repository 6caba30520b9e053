"""The ``pt start --backend intel-pt`` backend: the CPU's own Intel PT, one perf_event_open event per thread.

Entry point: ``backend.IntelPtBackend``, held by debugger/live_session.py.  pmu.py says what the CPU
offers, thread_event.py owns one thread's event and its AUX buffer (aux_snapshot.py reads it in
snapshot mode), perf_event.py and perf_event_errors.py wrap the system call and its errors.
"""
