"""Helpers the tests share: an in-process LLDB, native lldb-22 as a reference decoder, bad bundles, recordings."""
