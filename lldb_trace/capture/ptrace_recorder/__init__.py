"""The exact recorder behind ``lldb-trace record``: ptrace single-steps every thread of a launched program.

Entry point: ``recording.record(program, args, options, progress)`` returns a Recording, which
``bundle_writer.write_bundle`` writes as a bundle with each thread's ground truth.  ptrace.py is the
ctypes binding, stop_signal.py words a fatal signal's stop, progress_line.py shows the count on stderr.
"""
