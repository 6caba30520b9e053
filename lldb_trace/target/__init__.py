"""Post-mortem LLDB targets for traced processes (imports ``lldb``)."""
