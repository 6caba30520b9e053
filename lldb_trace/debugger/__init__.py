"""What LLDB sees of a trace (imports ``lldb``): processes, threads and frames, and live sessions.

A loaded bundle becomes post-mortem targets whose ScriptedProcess threads stop
where their traces end (postmortem.py, scripted_process.py); a live process
traced with ``pt start`` gets a session whose recording runs inside LLDB's own
stepping (live_session.py, recording_plan.py).  The registry says which target
holds which trace.
"""
