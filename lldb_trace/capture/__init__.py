"""Capture: recording control flow as Intel PT streams (no ``lldb`` import).

The software recorder single-steps a real process and encodes its exact
control flow with libipt's encoder; see session.record and bundle_writer.
"""
