"""The software Intel PT encoder that both software recorders (ptrace_recorder/, live_software/) drive.

Entry point: ``thread_recorder.ThreadRecorder``, told each step a thread makes; it writes the packets
through pt_writer.py (timing packets from timing_packets.py) and keeps the thread's ground truth
(ground_truth.py: every executed address, as tests and benchmarks compare decoders against).
"""
