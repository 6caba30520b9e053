"""What x86-64 instructions do to control flow (capstone; no ``lldb``).

instructions.py classifies each instruction by how Intel PT reports its
successor (the recorder and block expansion); branches.py works out where a
branch goes from the registers before it runs (the live recorder);
control_flow_kind.py names instructions as LLDB's ``--kind`` does.
"""
