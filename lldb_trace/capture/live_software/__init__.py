"""The ``pt start --backend software`` backend: what a thread stepped by LLDB ran, as an Intel PT stream.

Entry point: ``backend.SoftwareBackend``, driven by debugger/recording_plan.py.  lookahead.py finds the
instructions up to the next branch the thread must stop at; emulation.py predicts longer stretches in
an emulator, so the real thread stops once per stretch.
"""
