"""Helpers the tests share (fixtures are in tests/conftest.py): paths, the scripts beside the committed traces,
an in-process LLDB and LLDB binaries in batch mode, what LLDB printed read back, native lldb-22 as a reference
decoder, bad bundles and fuzz campaigns, recordings."""
